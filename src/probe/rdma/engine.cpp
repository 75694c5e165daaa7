// The RDMA probe engine's loop. One thread: post the PINGs that are due, drain the CQ in batches
// (receives: PINGs to answer, PONGs and follow-ups to match, garbage to count; sends: stamps of
// our PINGs, PONGs whose completion triggers the follow-up), re-post every receive buffer at once,
// resolve probes and fold them into windows, then sleep on the CQ's channel until the next due
// time. Nothing on the per-packet path allocates: buffers, rings and tables are made up front;
// only the first PING from a new peer creates its address handle.
#include "probe/rdma/engine.hpp"

#include <arpa/inet.h>
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "base/clock.hpp"
#include "base/log.hpp"
#include "base/random.hpp"
#include "net/epoll.hpp"
#include "probe/rdma/in_flight.hpp"
#include "probe/rdma/recv_ring.hpp"
#include "probe/rdma/rtt.hpp"
#include "probe/rdma/windows.hpp"
#include "probe/rdma/wire.hpp"
#include "rdma/address_handle.hpp"
#include "rdma/completion_channel.hpp"
#include "rdma/device.hpp"
#include "rdma/error.hpp"
#include "rdma/extended_cq.hpp"
#include "rdma/memory_region.hpp"
#include "rdma/protection_domain.hpp"
#include "rdma/queue_pair.hpp"
#include "rdma/work_request.hpp"

namespace weft::probe {

namespace {

namespace w = rdma_wire;

constexpr uint64_t kRecvBit = 1ull << 63;
constexpr size_t kPollBatch = 256;
constexpr uint32_t kMsgSlot = 64;  // bytes per send buffer
static_assert(w::kSize <= kMsgSlot);
constexpr int64_t kMaxSleepNs = 2'000'000;  // timeouts and windows are checked at least this often

enum class SendKind : uint8_t { ping, pong, followup };

struct SendCtx {
  SendKind kind = SendKind::ping;
  uint64_t session = 0, seq = 0;
  ibv_ah* ah = nullptr;
  uint32_t qpn = 0, qkey = 0;
  CompletionStamp ping_rx;  // pong: when the PING it answers was received
  int64_t post_mono = 0;    // when it was posted (the software send time)
};

struct PongReq {
  ibv_ah* ah = nullptr;
  uint32_t qpn = 0, qkey = 0;
  uint64_t session = 0, seq = 0;
  CompletionStamp ping_rx;
};

struct PeerKey {
  std::array<uint8_t, 16> gid{};
  uint16_t lid = 0;
  bool global = false;
  bool operator==(const PeerKey&) const = default;
};
struct PeerHash {
  size_t operator()(const PeerKey& k) const {
    uint64_t a, b;
    std::memcpy(&a, k.gid.data(), 8);
    std::memcpy(&b, k.gid.data() + 8, 8);
    return std::hash<uint64_t>()(a * 0x9e3779b97f4a7c15ull ^ b ^ (uint64_t{k.lid} << 1) ^ k.global);
  }
};

struct TargetState {
  RdmaTarget target;
  std::string addr_text;
  std::optional<rdma::AddressHandle> ah;
  uint32_t gen = 0;
  bool retired = false;
  int64_t phase_mono = 0;
  uint64_t k = 0;  // the k-th send is due at phase + k * interval
  uint64_t sends = 0;
  RdmaWindows windows;
};

std::string gid_text(const ibv_gid& g) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, g.raw, buf, sizeof buf);
  return buf;
}

std::string target_text(const RdmaTarget& t) {
  return fmt::format("{} qpn {}", t.global ? gid_text(t.gid) : fmt::format("lid {}", t.lid), t.qpn);
}

bool same_target(const RdmaTarget& a, const RdmaTarget& b) {
  return a.name == b.name && a.global == b.global && std::memcmp(a.gid.raw, b.gid.raw, 16) == 0 &&
         a.lid == b.lid && a.qpn == b.qpn && a.qkey == b.qkey;
}

CompletionStamp stamp_of(const rdma::WorkCompletion& c) { return {c.nic_ticks, c.poll_mono_ns}; }

void inc(std::atomic<uint64_t>& c, uint64_t n = 1) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

}  // namespace

std::string RdmaAddress::to_string() const {
  std::string where = ethernet ? fmt::format("gid {} (index {})", gid_text(gid), gid_index)
                               : fmt::format("lid {} gid {} (index {})", lid, gid_text(gid), gid_index);
  return fmt::format("{} port {} {} qpn {} qkey 0x{:08x}", device, port, where, qpn, qkey);
}

struct RdmaEngine::Impl {
  RdmaEngineConfig cfg;
  RdmaAddress addr;
  StampChoice clock;
  rdma::Device dev;
  rdma::ProtectionDomain pd;
  std::shared_ptr<rdma::CompletionChannel> channel;
  rdma::ExtendedCq cq;
  rdma::QueuePair qp;
  rdma::MemoryRegion mr;  // the send buffers
  rdma::ConnectOptions opts;

  uint32_t send_depth = 0, recv_slot = 0;

  // Receive side: recv_ring buffers of recv_slot bytes, kRecvChunk to a registered chunk, all
  // posted; the QP holds up to recv_capacity (see recv_ring.hpp for how the ring is sized).
  std::vector<rdma::MemoryRegion> recv_chunks;
  uint32_t recv_ring = 0, recv_capacity = 0;
  size_t recv_taken = 0;  // receive completions in the current drain()
  std::vector<rdma::RecvWr> reposts;
  // Send ring: slots are used in post order and complete in that order (one QP, all signalled).
  std::vector<SendCtx> sends;
  std::vector<rdma::SendWr> batch;  // built this turn, posted by flush_sends()
  uint64_t head = 0, tail = 0;      // posted (incl. batch) / completed
  // PONGs waiting for send-queue room.
  std::vector<PongReq> backlog;
  uint64_t bl_head = 0, bl_tail = 0;
  std::unordered_map<PeerKey, rdma::AddressHandle, PeerHash> peers;

  std::vector<std::unique_ptr<TargetState>> targets;
  uint32_t next_gen = 1;
  std::mutex targets_mu;
  std::optional<std::vector<RdmaTarget>> new_targets;
  std::optional<RdmaSchedule> new_schedule;

  uint64_t session = 0, next_seq = 0;
  std::optional<RdmaInFlight> in_flight;
  std::vector<rdma::WorkCompletion> completions;
  std::function<void(const RdmaProbeResult&)> on_probe;
  std::function<void(const RdmaTarget&, const std::string&)> on_skipped;
  std::function<void(WindowStats&&)> on_window;

  std::atomic<bool> stopping{false};
  net::EventFd wake;  // set_targets(), set_schedule() and stop() wake a sleeping run()
  Rng rng;

  struct {
    std::atomic<uint64_t> sent{0}, received{0}, lost{0}, late{0}, duplicate{0}, evicted{0}, weird{0},
        garbage{0}, unknown_session{0}, unknown_probe{0}, send_errors{0}, recv_errors{0}, pings_received{0},
        pongs_sent{0}, followups_sent{0}, responder_drops{0}, recv_posted{0}, recv_ring{0};
  } c;

  Impl(RdmaEngineConfig config, rdma::Device d, rdma::ProtectionDomain p,
       std::shared_ptr<rdma::CompletionChannel> ch, rdma::ExtendedCq q, rdma::QueuePair qpair,
       rdma::MemoryRegion m, net::EventFd wake)
      : cfg(std::move(config)),
        dev(std::move(d)),
        pd(std::move(p)),
        channel(std::move(ch)),
        cq(std::move(q)),
        qp(std::move(qpair)),
        mr(std::move(m)),
        wake(std::move(wake)) {}

  size_t outstanding() const { return head - tail; }

  // --- receive buffers -------------------------------------------------------------------
  void queue_repost(uint32_t i) {
    const auto& chunk = recv_chunks[i / kRecvChunk];
    reposts.push_back(
        rdma::RecvWr::into(chunk.local(size_t{i % kRecvChunk} * recv_slot, recv_slot), kRecvBit | i));
  }
  const uint8_t* recv_buf(uint32_t i) const {
    return reinterpret_cast<const uint8_t*>(recv_chunks[i / kRecvChunk].data() +
                                            size_t{i % kRecvChunk} * recv_slot);
  }
  size_t active_targets = 0;
  uint32_t ring_for_peers() const {
    return recv_ring_for_peers(active_targets,
                               recv_per_target(cfg.interval.count(), cfg.timeout.count(), recv_capacity),
                               peers.size(), recv_capacity);
  }
  // Registers and posts buffers until the ring holds `want` (at most recv_capacity). A chunk that
  // cannot be registered stops the growth for good (logged once): the ring keeps what it has.
  Status grow_recv(uint32_t want) {
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
  Status flush_reposts() {
    if (reposts.empty()) return {};
    auto st = qp.post_recv(std::span<rdma::RecvWr>(reposts));
    if (!st) return st;
    inc(c.recv_posted, reposts.size());
    reposts.clear();
    return {};
  }

  // --- sends -----------------------------------------------------------------------------
  bool post(SendKind kind, const w::Message& m, ibv_ah* ah, uint32_t qpn, uint32_t qkey,
            const CompletionStamp& ping_rx = {}) {
    if (outstanding() >= send_depth) return false;
    const uint32_t i = static_cast<uint32_t>(head % send_depth);
    ++head;
    const size_t off = size_t{i} * kMsgSlot;
    w::encode(m, std::span<uint8_t, w::kSize>(reinterpret_cast<uint8_t*>(mr.data() + off), w::kSize));
    sends[i] = SendCtx{kind, m.session, m.seq, ah, qpn, qkey, ping_rx, 0};
    batch.push_back(rdma::SendWr::send(mr.local(off, w::kSize), i).to(ah, qpn, qkey));
    return true;
  }

  void flush_sends() {
    if (batch.empty()) return;
    rdma::chain(std::span<rdma::SendWr>(batch));
    // A PONG's software send time is its post: stamp it here, not when it was queued.
    const int64_t now = mono_ns();
    for (auto& w : batch) sends[w.wr.wr_id].post_mono = now;
    size_t first_bad = 0;
    if (auto st = qp.post_send(std::span<rdma::SendWr>(batch), &first_bad); !st) {
      // WRs from first_bad on were not posted: they are the newest in the ring, so take them back.
      log().warn("rdma probe: {} ({} of {} WRs not posted)", st.error().message, batch.size() - first_bad,
                 batch.size());
      for (size_t j = first_bad; j < batch.size(); ++j) {
        const SendCtx& s = sends[batch[j].wr.wr_id];
        inc(c.send_errors);
        if (s.kind == SendKind::ping && s.session == session) in_flight->on_send_failed(s.seq);
      }
      head -= batch.size() - first_bad;
    }
    batch.clear();
  }

  // --- responder -------------------------------------------------------------------------
  ibv_ah* peer_ah(const w::Message& m) {
    PeerKey k{m.gid, m.lid, (m.flags & w::kGlobal) != 0};
    if (auto it = peers.find(k); it != peers.end()) return it->second.raw();
    if (peers.size() >= cfg.max_peers) return nullptr;
    rdma::ConnectOptions o = opts;
    ibv_gid g{};
    std::memcpy(g.raw, m.gid.data(), 16);
    if (!k.global) o.gid_index = -1;
    auto ah = rdma::AddressHandle::create(pd, o, g, m.lid);
    if (!ah) {
      log().warn("rdma responder: no address handle for a prober: {}", ah.error().message);
      return nullptr;
    }
    return peers.emplace(k, std::move(*ah)).first->second.raw();
  }

  bool post_pong(const PongReq& r) {
    w::Message m;
    m.type = w::Type::pong;
    m.session = r.session;
    m.seq = r.seq;
    return post(SendKind::pong, m, r.ah, r.qpn, r.qkey, r.ping_rx);
  }

  void on_ping(const w::Message& m, const rdma::WorkCompletion& cpl) {
    inc(c.pings_received);
    if (!cfg.respond) return;
    PongReq r{peer_ah(m), cpl.src_qp, m.qkey, m.session, m.seq, stamp_of(cpl)};
    if (!r.ah) {
      inc(c.responder_drops);
      return;
    }
    if (bl_head == bl_tail && post_pong(r)) return;
    if (bl_head - bl_tail >= backlog.size()) {
      inc(c.responder_drops);
      return;
    }
    backlog[bl_head++ % backlog.size()] = r;
  }

  void drain_backlog() {
    while (bl_tail != bl_head && post_pong(backlog[bl_tail % backlog.size()])) ++bl_tail;
  }

  // --- completions -----------------------------------------------------------------------
  Status on_recv(const rdma::WorkCompletion& cpl) {
    const uint32_t i = static_cast<uint32_t>(cpl.wr_id & ~kRecvBit);
    if (i >= recv_ring) return fail("rdma probe: receive completion with unknown wr_id {}", cpl.wr_id);
    ++recv_taken;
    c.recv_posted.fetch_sub(1, std::memory_order_relaxed);
    if (cpl.status == IBV_WC_WR_FLUSH_ERR)
      return fail("rdma probe: receive flushed: the QP on {} went into the error state", dev.name());
    queue_repost(i);
    if (cpl.status != IBV_WC_SUCCESS) {
      inc(c.recv_errors);
      return {};
    }
    const uint8_t* buf = recv_buf(i);
    w::Message m;
    if (cpl.byte_len < rdma::kGrhBytes || cpl.byte_len > recv_slot ||
        w::decode(std::span<const uint8_t>(buf + rdma::kGrhBytes, cpl.byte_len - rdma::kGrhBytes), m) !=
            w::ParseError::ok) {
      inc(c.garbage);
      return {};
    }
    switch (m.type) {
      case w::Type::ping:
        on_ping(m, cpl);
        break;
      case w::Type::pong:
      case w::Type::followup: {
        if (m.session != session) {
          inc(c.unknown_session);
          break;
        }
        RdmaMatch r = m.type == w::Type::pong
                          ? in_flight->on_pong(m.seq, stamp_of(cpl))
                          : in_flight->on_followup(m.seq, m.delay_ns, m.flags & w::kHardware);
        if (r == RdmaMatch::unknown)
          inc(c.unknown_probe);
        else if (r == RdmaMatch::late)
          inc(c.late);
        else if (r == RdmaMatch::duplicate)
          inc(c.duplicate);
        break;
      }
    }
    return {};
  }

  Status on_send(const rdma::WorkCompletion& cpl) {
    if (cpl.wr_id >= send_depth || tail == head)
      return fail("rdma probe: send completion with unknown wr_id {} ({} {}, {} sends outstanding)",
                  cpl.wr_id, rdma::wc_opcode_name(cpl.opcode), rdma::wc_status_name(cpl.status), head - tail);
    const SendCtx s = sends[cpl.wr_id];
    ++tail;
    if (cpl.status == IBV_WC_WR_FLUSH_ERR)
      return fail("rdma probe: send flushed: the QP on {} went into the error state", dev.name());
    const bool ok = cpl.status == IBV_WC_SUCCESS;
    if (!ok) inc(c.send_errors);
    switch (s.kind) {
      case SendKind::ping:
        if (ok)
          in_flight->on_tx(s.seq, stamp_of(cpl));
        else
          in_flight->on_send_failed(s.seq);
        break;
      case SendKind::pong: {
        if (!ok) break;
        inc(c.pongs_sent);
        const ResponderDelay d = responder_delay(clock.clock, s.ping_rx, stamp_of(cpl), s.post_mono);
        w::Message m;
        m.type = w::Type::followup;
        m.flags = d.hardware ? w::kHardware : 0;
        m.session = s.session;
        m.seq = s.seq;
        m.delay_ns = d.ns;
        // The completion just freed a slot, so this always fits.
        if (!post(SendKind::followup, m, s.ah, s.qpn, s.qkey)) inc(c.send_errors);
        break;
      }
      case SendKind::followup:
        if (ok) inc(c.followups_sent);
        break;
    }
    return {};
  }

  // Drains the CQ completely (batch after batch), then re-posts receive buffers and flushes sends.
  Result<size_t> drain() {
    size_t total = 0;
    recv_taken = 0;
    const uint32_t ring_before = recv_ring;
    for (;;) {
      auto n = cq.poll(std::span<rdma::WorkCompletion>(completions));
      if (!n) return std::unexpected(n.error());
      for (size_t j = 0; j < *n; ++j) {
        const rdma::WorkCompletion& cpl = completions[j];
        auto st = (cpl.wr_id & kRecvBit) ? on_recv(cpl) : on_send(cpl);
        if (!st) return std::unexpected(st.error());
      }
      total += *n;
      drain_backlog();
      // Buffers go back before the next batch is read, so the receive queue never runs dry.
      if (auto st = flush_reposts(); !st) return std::unexpected(st.error());
      flush_sends();
      if (*n < completions.size()) break;
    }
    // A drain that took more than half the ring, or new peers (probers answered for the first
    // time): grow before the next burst can find the ring empty.
    if (total > 0) {
      const uint32_t want =
          std::max(recv_ring_after_drain(ring_before, recv_taken, recv_capacity), ring_for_peers());
      if (want > recv_ring)
        if (auto st = grow_recv(want); !st) return std::unexpected(st.error());
    }
    return total;
  }

  // --- prober ----------------------------------------------------------------------------
  TargetState* target_of(const RdmaSlot& s) {
    if (s.target >= targets.size()) return nullptr;
    TargetState* t = targets[s.target].get();
    return (t->gen == s.target_gen && !t->retired) ? t : nullptr;
  }

  auto emitter(TargetState* t) {
    return [this, t](WindowAccumulator& a) {
      WindowStats s;
      s.protocol = Protocol::rdma;
      s.target = t->target.name;
      s.target_address = t->addr_text;
      a.finish(cfg.window.count(), s);
      if (on_window) on_window(std::move(s));
    };
  }

  void resolve(RdmaSlot& s, RdmaOutcome o) {
    TargetState* t = target_of(s);
    RdmaProbeResult r;
    r.seq = s.seq;
    if (t) r.target = t->target.name;
    if (o == RdmaOutcome::answered) {
      r.answered = true;
      r.sample = compute_rdma_rtt(clock.clock, s.timing);
      inc(c.received);
      if (r.sample.weird) inc(c.weird);
      if (t) t->windows.at(s.deadline_unix_ns, cfg.window.count(), emitter(t)).add_answer(r.sample);
    } else {
      inc(c.lost);
      if (o == RdmaOutcome::evicted) inc(c.evicted);
      if (t) t->windows.at(s.deadline_unix_ns, cfg.window.count(), emitter(t)).add_lost();
    }
    if (on_probe && t) on_probe(r);
  }

  void apply_schedule(const RdmaSchedule& s) {
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

  Status apply_targets() {
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

  // Posts every PING that is due; returns the next due time.
  int64_t send_due(int64_t now, int64_t now_unix) {
    const int64_t interval = cfg.interval.count();
    int64_t next = now + kMaxSleepNs;
    for (size_t ti = 0; ti < targets.size(); ++ti) {
      TargetState& t = *targets[ti];
      if (t.retired || (cfg.count && t.sends >= cfg.count)) continue;
      int64_t due = t.phase_mono + static_cast<int64_t>(t.k) * interval;
      if (due <= now - 10 * interval) {
        // Far behind (the loop was starved): skip the missed sends rather than burst them out.
        t.k = static_cast<uint64_t>((now - t.phase_mono) / interval);
        due = t.phase_mono + static_cast<int64_t>(t.k) * interval;
      }
      while (due <= now && (!cfg.count || t.sends < cfg.count)) {
        // Keep half of the send queue for the responder's PONGs and follow-ups.
        if (outstanding() >= send_depth / 2) {
          flush_sends();
          return now;
        }
        w::Message m;
        m.type = w::Type::ping;
        m.session = session;
        m.seq = ++next_seq;
        m.qkey = cfg.qkey;
        if (t.target.global) {
          m.flags = w::kGlobal;
          std::memcpy(m.gid.data(), addr.gid.raw, 16);
        } else {
          m.lid = addr.lid;
        }
        const int64_t post_mono = mono_ns();
        in_flight->start(m.seq, static_cast<uint32_t>(ti), t.gen, post_mono, post_mono + cfg.timeout.count(),
                         now_unix + (post_mono - now) + cfg.timeout.count());
        if (!post(SendKind::ping, m, t.ah->raw(), t.target.qpn, t.target.qkey)) {
          in_flight->on_send_failed(m.seq);
          flush_sends();
          return now;
        }
        inc(c.sent);
        ++t.sends;
        ++t.k;
        due += interval;
      }
      if (!cfg.count || t.sends < cfg.count) next = std::min(next, due);
    }
    flush_sends();
    return next;
  }

  void close_windows(int64_t now_unix) {
    for (auto& t : targets)
      if (!t->retired) t->windows.close_until(now_unix, cfg.window.count(), emitter(t.get()));
  }

  // Sleeps until a completion arrives, the wake fd fires or until_mono passes.
  Status sleep_until(int64_t until_mono) {
    // Send completions are due within microseconds: wait for them awake, so that the follow-ups
    // they trigger are not late by a wake-up.
    const int64_t spin = cfg.send_spin.count();
    for (const int64_t spin_end = std::min(until_mono, mono_ns() + spin);
         outstanding() > 0 && mono_ns() < spin_end;) {
      auto n = drain();
      if (!n) return std::unexpected(n.error());
    }
    if (auto st = cq.arm(); !st) return st;
    // A completion that came before the arm raised no event: look once more.
    auto n = drain();
    if (!n) return std::unexpected(n.error());
    if (*n > 0) return {};
    const int64_t left = until_mono - mono_ns();
    if (left <= 0) return {};
    pollfd fds[2] = {{channel->fd(), POLLIN, 0}, {wake.fd(), POLLIN, 0}};
    timespec ts = ns_timespec(left);
    if (ppoll(fds, 2, &ts, nullptr) < 0 && errno != EINTR) return fail_errno("ppoll");
    if (fds[0].revents & POLLIN) {
      // Take (and acknowledge) every pending event: the channel is non-blocking, nullptr = none left.
      for (;;) {
        auto ev = channel->get_event(std::chrono::milliseconds(-1));
        if (!ev) return std::unexpected(ev.error());
        if (!*ev) break;
      }
    }
    if (fds[1].revents & POLLIN) wake.drain();
    return {};
  }

  // Busy polling: spin on the CQ alone until it has completions, the next send is due, or
  // kBusyPolls empty polls have gone by. Reading the clocks on every turn (two reads, plus the
  // bookkeeping) was what bounded the RTT floor: on the qemu guest a clock read costs more than
  // an empty poll, and a PONG that landed mid-turn waited for the rest of it.
  static constexpr int kBusyPolls = 256;
  Status busy_spin(int64_t next) {
    for (int i = 0; i < kBusyPolls && !stopping.load(std::memory_order_relaxed); ++i) {
      auto n = drain();
      if (!n) return std::unexpected(n.error());
      if (*n > 0) return {};
      // Every 32 empty polls, look whether a PING is due.
      if ((i & 31) == 31 && mono_ns() >= next) return {};
    }
    return {};
  }

  Status run() {
    const int64_t grace = cfg.followup_grace.count();
    while (!stopping.load(std::memory_order_relaxed)) {
      if (auto st = apply_targets(); !st) return st;
      auto n = drain();
      if (!n) return std::unexpected(n.error());
      const int64_t now = mono_ns();
      const int64_t now_unix = realtime_ns();
      in_flight->sweep(now, grace);
      close_windows(now_unix);
      const int64_t next = send_due(now, now_unix);
      if (cfg.busy_poll) {
        if (auto st = busy_spin(next); !st) return st;
        continue;
      }
      if (auto st = sleep_until(std::min(next, now + kMaxSleepNs)); !st) return st;
    }
    // Finish what the targets have: the last, partial windows.
    for (auto& t : targets)
      if (!t->retired) t->windows.close_all(emitter(t.get()));
    return {};
  }
};

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
  auto mr = rdma::MemoryRegion::allocate(*pd, size_t{send_depth} * kMsgSlot, rdma::access::local);
  if (!mr) return std::unexpected(mr.error());

  auto wake = net::EventFd::create();
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
  impl->completions.resize(kPollBatch);
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

Status RdmaEngine::run(std::function<void(WindowStats&&)> on_window) {
  impl_->on_window = std::move(on_window);
  // stopping is not cleared here: a stop() that comes before run() starts must not be lost (the
  // agent stops engines from another thread at any moment). An engine runs once.
  return impl_->run();
}

void RdmaEngine::stop() {
  impl_->stopping.store(true);
  impl_->wake.signal();
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
