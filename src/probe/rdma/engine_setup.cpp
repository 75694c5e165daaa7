// The RDMA probe engine's set-up: the device, its GID and clock, the CQ, the UD queue pair and the
// buffers; growing the receive ring; new targets and schedules; the public interface's thin methods.
#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "base/clock.hpp"
#include "base/log.hpp"
#include "probe/rdma/engine_impl.hpp"
#include "rdma/error.hpp"

namespace weft::probe {

std::string RdmaAddress::to_string() const {
  std::string where =
      ethernet ? fmt::format("gid {} (index {})", RdmaEngine::Impl::gid_text(gid), gid_index)
               : fmt::format("lid {} gid {} (index {})", lid, RdmaEngine::Impl::gid_text(gid), gid_index);
  return fmt::format("{} port {} {} qpn {} qkey 0x{:08x}", device, port, where, qpn, qkey);
}

Status RdmaEngine::Impl::grow_recv(uint32_t want) {
  want = std::min(want, recv_capacity);
  if (want <= recv_ring) return {};
  const uint32_t from = recv_ring;
  while (recv_ring < want) {
    if (recv_ring / kRecvChunk == recv_chunks.size()) {
      auto m = rdma::MemoryRegion::allocate(pd, size_t{kRecvChunk} * recv_slot, rdma::access::local);
      if (!m) {
        log().warn("rdma probe: receive ring stays at {} buffers: {}", recv_ring, m.error().message);
        recv_capacity = recv_ring;
        break;
      }
      recv_chunks.push_back(std::move(*m));
    }
    queue_repost(recv_ring++);
    if (reposts.size() >= 1024)
      if (auto st = flush_reposts(); !st) return st;
  }
  if (auto st = flush_reposts(); !st) return st;
  c.recv_ring.store(recv_ring, std::memory_order_relaxed);
  if (from != 0) log().debug("rdma probe: receive ring {} -> {} buffers", from, recv_ring);
  return {};
}

void RdmaEngine::Impl::apply_schedule(const RdmaSchedule& s) {
  if (s.interval == cfg.interval && s.timeout == cfg.timeout && s.window == cfg.window) return;
  // Window bounds depend on the window length: finish the open ones under the old length.
  for (auto& t : targets)
    if (!t->retired) t->windows.close_all(emitter(t.get()));
  cfg.interval = s.interval;
  cfg.timeout = s.timeout;
  cfg.window = s.window;
  const int64_t now = mono_ns();
  for (auto& t : targets) {
    t->phase_mono =
        now + static_cast<int64_t>(rng.below(static_cast<uint64_t>(cfg.interval.count()) / 4 + 1));
    t->k = 0;
  }
}

Status RdmaEngine::Impl::apply_targets() {
  std::optional<std::vector<RdmaTarget>> list;
  std::optional<RdmaSchedule> schedule;
  {
    std::lock_guard lk(targets_mu);
    list.swap(new_targets);
    schedule.swap(new_schedule);
  }
  if (schedule) apply_schedule(*schedule);
  if (!list) return schedule ? grow_recv(ring_for_peers()) : Status{};
  std::vector<bool> keep(targets.size(), false);
  const int64_t now = mono_ns();
  for (auto& nt : *list) {
    bool found = false;
    for (size_t i = 0; i < targets.size(); ++i)
      if (!targets[i]->retired && !keep[i] && same_target(targets[i]->target, nt)) {
        keep[i] = found = true;
        break;
      }
    if (found) continue;
    auto t = std::make_unique<TargetState>();
    t->target = nt;
    t->addr_text = target_text(nt);
    rdma::ConnectOptions o = opts;
    if (!nt.global) o.gid_index = -1;
    auto ah = rdma::AddressHandle::create(pd, o, nt.gid, nt.lid);
    if (!ah) {
      log().warn("rdma probe: target {} ({}) skipped: {}", nt.name, t->addr_text, ah.error().message);
      if (on_skipped) on_skipped(nt, ah.error().message);
      continue;
    }
    t->ah.emplace(std::move(*ah));
    t->gen = next_gen++;
    // Spread the first sends over one interval so that targets do not go out in lockstep.
    t->phase_mono =
        now + static_cast<int64_t>(rng.below(static_cast<uint64_t>(cfg.interval.count()) / 4 + 1));
    targets.push_back(std::move(t));
    keep.push_back(true);
  }
  for (size_t i = 0; i < keep.size(); ++i)
    if (!keep[i] && !targets[i]->retired) {
      targets[i]->windows.close_all(emitter(targets[i].get()));
      targets[i]->retired = true;
    }
  active_targets = 0;
  for (const auto& t : targets) active_targets += t->retired ? 0 : 1;
  // Room for the answers of every target before the first PING goes out.
  return grow_recv(ring_for_peers());
}

RdmaEngine::RdmaEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RdmaEngine::~RdmaEngine() = default;

Result<std::unique_ptr<RdmaEngine>> RdmaEngine::create(const RdmaEngineConfig& config) {
  if (config.interval.count() <= 0 || config.timeout.count() <= 0 || config.window.count() <= 0)
    return fail("rdma probe: interval, timeout and window must be positive");
  auto dev = rdma::Device::open(config.device);
  if (!dev) return std::unexpected(dev.error());
  auto port = dev->port(config.port);
  if (!port) return std::unexpected(port.error());
  if (!port->active())
    return fail("{} port {} is not active (state {})", dev->name(), config.port, int(port->state));
  auto caps = dev->caps();
  if (!caps) return std::unexpected(caps.error());

  RdmaAddress addr;
  addr.device = dev->name();
  addr.port = config.port;
  addr.ethernet = port->is_ethernet();
  addr.qkey = config.qkey;
  addr.lid = port->lid;
  if (addr.ethernet && config.gid_index < 0) {
    in_addr a{};
    if (!config.address.empty() && inet_pton(AF_INET, config.address.c_str(), &a) != 1)
      return fail("rdma probe: bad IPv4 address '{}'", config.address);
    auto e = dev->roce_v2_gid(a, config.port);
    if (!e) return std::unexpected(e.error());
    addr.gid = e->gid;
    addr.gid_index = static_cast<int>(e->index);
  } else {
    const int idx = config.gid_index < 0 ? 0 : config.gid_index;
    auto table = dev->gid_table(config.port);
    if (!table) return std::unexpected(table.error());
    auto it = std::find_if(table->begin(), table->end(),
                           [&](const rdma::GidEntry& g) { return int(g.index) == idx; });
    if (it == table->end()) return fail("{} port {} has no GID at index {}", dev->name(), config.port, idx);
    addr.gid = it->gid;
    addr.gid_index = idx;
  }

  StampChoice clock;
  if (config.hardware_timestamps) {
    auto clk = dev->clock();
    clock =
        choose_stamp_clock(true, clk ? std::optional(*clk) : std::nullopt, clk ? "" : clk.error().message);
  } else {
    clock = choose_stamp_clock(false, std::nullopt, "");
  }

  auto pd = rdma::ProtectionDomain::create(*dev);
  if (!pd) return std::unexpected(pd.error());
  std::shared_ptr<rdma::CompletionChannel> channel;
  if (!config.busy_poll) {
    auto ch = rdma::CompletionChannel::create(*dev);
    if (!ch) return std::unexpected(ch.error());
    channel = *ch;
    if (auto st = channel->set_nonblocking(); !st) return std::unexpected(st.error());
  }
  const uint32_t max_wr = caps->max_qp_wr > 0 ? static_cast<uint32_t>(caps->max_qp_wr) : 1024;
  uint32_t send_depth = std::clamp<uint32_t>(config.send_depth, 16, max_wr);
  uint32_t recv_depth = std::clamp<uint32_t>(config.recv_depth, 16, max_wr);
  // One CQ holds every completion the QP can have outstanding.
  if (caps->max_cqe > 0 && send_depth + recv_depth > static_cast<uint32_t>(caps->max_cqe))
    recv_depth = static_cast<uint32_t>(caps->max_cqe) - send_depth;
  auto cq = rdma::ExtendedCq::create(*dev, static_cast<int>(send_depth + recv_depth), clock.clock.hardware(),
                                     channel);
  if (!cq && clock.clock.hardware()) {
    clock = StampChoice{StampClock::software(), "timestamped CQ refused: " + cq.error().message};
    cq = rdma::ExtendedCq::create(*dev, static_cast<int>(send_depth + recv_depth), false, channel);
  }
  if (!cq) return std::unexpected(cq.error());

  rdma::QpOptions qo;
  qo.type = rdma::QpType::ud;
  qo.max_send_wr = send_depth;
  qo.max_recv_wr = recv_depth;
  qo.max_inline = 0;  // PINGs and PONGs are sent from registered memory
  qo.signal_all = true;
  auto qp = rdma::QueuePair::create(*pd, *cq, qo);
  if (!qp) return std::unexpected(qp.error());
  addr.qpn = qp->qpn();

  rdma::ConnectOptions opts;
  opts.port = config.port;
  opts.gid_index = addr.gid_index;
  opts.qkey = config.qkey;
  opts.sl = config.sl;
  opts.traffic_class = config.traffic_class;
  opts.hop_limit = config.hop_limit;
  if (auto st = qp->connect(opts, 0, rdma::QpAddress{}); !st) return std::unexpected(st.error());

  // Receive buffers hold a whole MTU plus the GRH, so no datagram can overflow one (a too-long UD
  // message would complete in error instead of being counted as garbage).
  const uint32_t mtu_bytes = 128u << static_cast<int>(port->active_mtu);
  const uint32_t recv_slot = (rdma::kGrhBytes + mtu_bytes + 63) / 64 * 64;
  auto mr = rdma::MemoryRegion::allocate(*pd, size_t{send_depth} * Impl::kMsgSlot, rdma::access::local);
  if (!mr) return std::unexpected(mr.error());

  auto wake = EventFd::create();
  if (!wake) return std::unexpected(wake.error());
  auto impl = std::make_unique<Impl>(config, std::move(*dev), std::move(*pd), std::move(channel),
                                     std::move(*cq), std::move(*qp), std::move(*mr), std::move(*wake));
  impl->addr = addr;
  impl->clock = clock;
  impl->opts = opts;
  impl->recv_capacity = recv_depth;
  impl->send_depth = send_depth;
  impl->recv_slot = recv_slot;
  impl->sends.resize(send_depth);
  impl->batch.reserve(send_depth);
  impl->backlog.resize(recv_depth);
  impl->reposts.reserve(recv_depth);
  impl->peers.reserve(std::min<size_t>(config.max_peers, 4096));
  impl->completions.resize(Impl::kPollBatch);
  impl->session = 0;
  while (impl->session == 0) impl->session = random_u64();
  Impl* p = impl.get();
  impl->in_flight.emplace(config.max_in_flight, [p](RdmaSlot& s, RdmaOutcome o) { p->resolve(s, o); });
  // The first receive buffers are posted before the QP can be reached by anyone.
  const uint32_t initial = std::max(recv_ring_for_peers(0, 0, 0, recv_depth), config.recv_initial);
  if (auto st = impl->grow_recv(initial); !st) return std::unexpected(st.error());
  log().debug("rdma probe engine on {}: recv {} (up to {}) x {} B, send {}, timestamps {}", addr.to_string(),
              impl->recv_ring, recv_depth, recv_slot, send_depth,
              clock.clock.hardware() ? "hardware" : "software (" + clock.why + ")");
  return std::unique_ptr<RdmaEngine>(new RdmaEngine(std::move(impl)));
}

const RdmaAddress& RdmaEngine::address() const { return impl_->addr; }
TimestampSource RdmaEngine::timestamp_source() const { return impl_->clock.clock.source(); }
const std::string& RdmaEngine::timestamp_note() const { return impl_->clock.why; }

void RdmaEngine::set_targets(std::vector<RdmaTarget> targets) {
  {
    std::lock_guard lk(impl_->targets_mu);
    impl_->new_targets = std::move(targets);
  }
  impl_->wake.signal();
}

Status RdmaEngine::set_schedule(const RdmaSchedule& schedule) {
  if (schedule.interval.count() <= 0 || schedule.timeout.count() <= 0 || schedule.window.count() <= 0)
    return fail("rdma probe: interval, timeout and window must be positive");
  {
    std::lock_guard lk(impl_->targets_mu);
    impl_->new_schedule = schedule;
  }
  impl_->wake.signal();
  return {};
}

void RdmaEngine::set_on_target_skipped(
    std::function<void(const RdmaTarget&, const std::string& why)> on_skipped) {
  impl_->on_skipped = std::move(on_skipped);
}

void RdmaEngine::set_on_probe(std::function<void(const RdmaProbeResult&)> on_probe) {
  impl_->on_probe = std::move(on_probe);
}

RdmaCounters RdmaEngine::counters() const {
  auto& c = impl_->c;
  auto g = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  RdmaCounters r;
  r.sent = g(c.sent);
  r.received = g(c.received);
  r.lost = g(c.lost);
  r.late = g(c.late);
  r.duplicate = g(c.duplicate);
  r.evicted = g(c.evicted);
  r.weird = g(c.weird);
  r.garbage = g(c.garbage);
  r.unknown_session = g(c.unknown_session);
  r.unknown_probe = g(c.unknown_probe);
  r.send_errors = g(c.send_errors);
  r.recv_errors = g(c.recv_errors);
  r.pings_received = g(c.pings_received);
  r.pongs_sent = g(c.pongs_sent);
  r.followups_sent = g(c.followups_sent);
  r.responder_drops = g(c.responder_drops);
  r.recv_posted = g(c.recv_posted);
  r.recv_ring = g(c.recv_ring);
  return r;
}

}  // namespace weft::probe
