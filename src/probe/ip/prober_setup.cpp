// Set-up of the IP prober: the public Prober class, applying a new target list (schedule,
// table size), the UDP sockets, and closing windows. Not on the per-probe path.
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "base/log.hpp"
#include "probe/ip/prober_impl.hpp"

namespace weft::probe {

Prober::Impl::TargetState* Prober::Impl::target_by_addr(const sockaddr_storage& ss, socklen_t len) {
  auto a = net::SocketAddress::from_sockaddr(reinterpret_cast<const sockaddr*>(&ss), len);
  for (auto& t : targets)
    if (t && a.same_endpoint(t->addr)) return t.get();
  return nullptr;
}

void Prober::Impl::apply_targets(int64_t now) {
  std::vector<Target> next;
  {
    std::lock_guard lk(mu);
    if (!pending_targets) return;
    next = std::move(*pending_targets);
    pending_targets.reset();
    has_pending.store(false);
  }
  std::unordered_map<std::string, uint32_t> existing;
  for (uint32_t i = 0; i < targets.size(); ++i) {
    auto& t = targets[i];
    if (t && !t->retired)
      existing.emplace(t->target.name + '\n' + t->target.host + '\n' + std::to_string(t->target.port), i);
  }
  std::vector<uint32_t> fresh;
  for (auto& tg : next) {
    auto key = tg.name + '\n' + tg.host + '\n' + std::to_string(tg.port);
    if (auto it = existing.find(key); it != existing.end()) {
      existing.erase(it);  // stays
      continue;
    }
    auto addr = net::SocketAddress::parse_ip(tg.host, tg.port);
    if (!addr) {
      log().warn("prober: target '{}': {}", tg.name, addr.error().message);
      continue;
    }
    const int sock = addr->family() == AF_INET6 ? 1 : 0;
    if (cfg.protocol == Protocol::udp && !udp[static_cast<size_t>(sock) * nflows].fd.valid()) {
      log().warn("prober: target '{}' ({}): no {} socket to probe from", tg.name, addr->to_string(),
                 sock ? "IPv6" : "IPv4");
      continue;
    }
    auto st = std::make_unique<TargetState>();
    st->target = std::move(tg);
    st->addr = *addr;
    st->addr_text = addr->to_string();
    st->sock = static_cast<uint8_t>(sock);
    st->gen = ++gen_counter;
    st->windows.resize(n_windows);  // their histograms store rows only once sampled
    if (tracing()) {
      st->traced_mono.assign(nflows, 0);
      st->trace_urgent.assign(nflows, 0);
      st->traced_hops.assign(nflows, {});
      st->traced_reached.assign(nflows, 0);
    }
    for (auto& w : st->windows) {
      w.keep_latency(cfg.window_latency);
      if (cfg.protocol == Protocol::udp) w.keep_flows(nflows);
    }
    uint32_t idx;
    if (!free_ids.empty()) {
      idx = free_ids.back();
      free_ids.pop_back();
      targets[idx] = std::move(st);
    } else {
      idx = static_cast<uint32_t>(targets.size());
      targets.push_back(std::move(st));
    }
    fresh.push_back(idx);
    if (cfg.protocol == Protocol::tcp && cfg.tcp_keep_open) {
      targets[idx]->kept = std::make_unique<KeptOpen>();
      keep_open_connect(idx, *targets[idx], now);
    }
  }
  for (auto& [key, idx] : existing) targets[idx]->retired = true;  // no longer in the list
  count_socket_targets();
  size_t active = 0;
  for (auto& t : targets) active += (t && !t->retired) ? 1 : 0;
  // Each target has at most timeout/interval + 1 probes unresolved (+1 for the send jitter); room
  // for a quarter more. At 10,000/s with a 1 s timeout: 12,750 slots for the 10,200 a timeout can
  // hold (issue 17's RSS work: 32,768 before, then 16,384, the power of two above); a probe pushed
  // out early is counted in `evicted`, so a table too small would show.
  const double per_target = static_cast<double>(timeout_ns) / static_cast<double>(interval_ns) + 2.0;
  grow_table(
      std::min(cfg.max_in_flight, static_cast<size_t>(1.25 * per_target * static_cast<double>(active))));
  // Spread new targets evenly over one interval, each with a random offset within its share.
  const size_t m = fresh.size();
  for (size_t j = 0; j < m; ++j) {
    auto& t = *targets[fresh[j]];
    t.phase_mono = now + static_cast<int64_t>((static_cast<double>(j) + rng.uniform()) *
                                              static_cast<double>(interval_ns) / static_cast<double>(m));
    t.k = 0;
    heap.push_back({t.phase_mono, fresh[j], t.gen});
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  }
}

void Prober::Impl::grow_table(size_t wanted) {
  const size_t before = table.size();
  table.grow(wanted);
  if (table.size() == before) return;
  tx_mask = std::bit_ceil(table.size()) - 1;
  for (auto& u : udp) {
    if (!u.fd.valid()) continue;
    u.txmap.assign(tx_mask + 1, 0);
  }
  for (uint64_t seq = next_seq > table.size() ? next_seq - table.size() : 1; seq < next_seq; ++seq) {
    Slot* s = table.find(seq);
    // Only UDP keys live here; a kept-open TCP probe's key is its connection's (TargetState).
    if (cfg.protocol == Protocol::udp && s && s->tx_id_valid) udp[s->sock].txmap[s->tx_id & tx_mask] = seq;
  }
  std::vector<uint64_t> ring(table.size());
  for (size_t i = 0; i < grace_count; ++i) ring[i] = grace_ring[(grace_head + i) % grace_ring.size()];
  grace_ring.swap(ring);
  grace_head = 0;
}

void Prober::Impl::close_conn(TargetState& t) {
  if (!t.kept) return;
  KeptOpen& c = *t.kept;
  if (c.conn.valid()) {
    ep.remove(c.conn.get());
    c.conn.reset();
  }
  c.connected = false;
  c.rlen = 0;
  c.tx_stamps = false;
  c.keys = {};
}

// How many targets each UDP socket serves: one with none is never polled (see poll_udp). Every
// flow of a family serves all of the family's targets.
void Prober::Impl::count_socket_targets() {
  for (auto& u : udp) u.targets = 0;
  for (auto& t : targets)
    if (t)
      for (size_t f = 0; f < nflows && !udp.empty(); ++f) ++udp[t->sock * nflows + f].targets;
}

void Prober::Impl::release_retired() {
  for (uint32_t i = 0; i < targets.size(); ++i) {
    auto& t = targets[i];
    if (!t || !t->retired || t->in_flight != 0) continue;
    bool open = false;
    for (auto& w : t->windows) open |= w.open();
    if (open) continue;
    close_conn(*t);
    for (size_t f = 0; f < nflows && !udp.empty(); ++f) --udp[t->sock * nflows + f].targets;
    t.reset();
    free_ids.push_back(i);
  }
}

Status Prober::Impl::open_sockets() {
  for (int f = 0; f < 2; ++f) bind_addr[f] = {};
  if (!cfg.bind_address.empty()) {
    auto a = net::SocketAddress::parse_ip(cfg.bind_address, 0);
    if (!a) return fail("prober: bind address: {}", a.error().message);
    bind_addr[a->family() == AF_INET6 ? 1 : 0] = *a;
  } else {
    bind_addr[0] = *net::SocketAddress::parse_ip("0.0.0.0", 0);
    bind_addr[1] = *net::SocketAddress::parse_ip("::", 0);
  }
  if (cfg.protocol != Protocol::udp) return {};
  udp.resize(2 * nflows);
  for (int f = 0; f < 2; ++f) {
    if (bind_addr[f].length == 0) continue;
    // One socket per flow, each bound to its own ephemeral port: the flow's source port.
    for (size_t k = 0; k < nflows; ++k) {
      auto fd = net::udp_socket(bind_addr[f]);
      if (!fd) {
        if (!cfg.bind_address.empty() || k > 0) return fail("prober: {}", fd.error().message);
        log().debug("prober: no {} socket: {}", f ? "IPv6" : "IPv4", fd.error().message);
        break;
      }
      if (f == 1) {  // this one only for IPv6 targets; IPv4 ones use the IPv4 socket
        int one = 1;
        setsockopt(fd->get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
      }
      if (auto st = net::enable_timestamping(fd->get(), true); !st)
        log().warn("prober: kernel timestamps unavailable ({}), using the user-space clock",
                   st.error().message);
      if (tracing()) {  // routers' ICMP answers to trace probes come on the error queue
        int one = 1;
        if (setsockopt(fd->get(), f ? SOL_IPV6 : SOL_IP, f ? IPV6_RECVERR : IP_RECVERR, &one, sizeof one) !=
            0)
          log().warn("prober: IP_RECVERR: {}; paths will not be traced", std::strerror(errno));
      }
      const size_t i = static_cast<size_t>(f) * nflows + k;
      UdpSock& u = udp[i];
      u.fd = std::move(*fd);
      u.family = f ? AF_INET6 : AF_INET;
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      if (getsockname(u.fd.get(), reinterpret_cast<sockaddr*>(&ss), &len) == 0)
        u.port = ntohs(f ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                         : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
      flow_ports[f].push_back(u.port);
      u.txmap.assign(std::bit_ceil(table.size()), 0);
      if (auto st = ep.add(u.fd.get(), EPOLLIN, tag(kUdp, i)); !st) return st;
    }
  }
  if (!udp[0].fd.valid() && !udp[nflows].fd.valid()) return fail("prober: no UDP socket could be opened");
  return {};
}

void Prober::Impl::emit(TargetState& t, WindowAccumulator& w) {
  if (w.empty()) {
    WindowStats scratch;
    w.finish(window_ns, scratch);
    return;
  }
  WindowStats ws;
  ws.protocol = cfg.protocol;
  ws.target = t.target.name;
  ws.target_address = t.addr_text;
  w.finish(window_ns, ws, flow_ports[t.sock]);
  // A flow that lost probes is traced next: a changed path explains many a loss.
  if (!t.trace_urgent.empty())
    for (size_t i = 0; i < ws.flows.size() && i < t.trace_urgent.size(); ++i)
      if (ws.flows[i].lost > 0) t.trace_urgent[i] = 1;
  if (on_window) on_window(std::move(ws));
}

void Prober::Impl::flush_windows(int64_t now) {
  if (now < next_flush_mono) return;
  const int64_t now_idx = window_index(now + offset_rt, window_ns);
  for (auto& t : targets) {
    if (!t) continue;
    for (auto& w : t->windows)
      if (w.open() && w.index() < now_idx) emit(*t, w);
  }
  release_retired();
  next_flush_mono = window_start(now_idx + 1, window_ns) - offset_rt;
}

// A probe that could not leave this host (no descriptor, no buffer, at the connection cap).
// Counted apart, with the reason kept (at most once a second) for last_local_error().
void Prober::Impl::mark_unsent(Slot& s, std::string_view why) {
  s.unsent = true;
  Counters::inc(ctr.unsent);
  const int64_t now = mono_ns();
  if (now - local_error_at < 1'000'000'000 && local_error_at != 0) return;
  local_error_at = now;
  std::lock_guard lk(local_error_mu);
  local_error.assign(why);
}

Prober::Prober(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Prober::~Prober() {
  if (!impl_) return;
  for (uint64_t seq = impl_->expire_cursor; seq < impl_->next_seq; ++seq) {
    Slot& s = impl_->table.at(seq);
    if (s.seq == seq && s.fd >= 0) ::close(s.fd);
  }
}

Result<std::unique_ptr<Prober>> Prober::create(const ProberConfig& config) {
  if (config.protocol == Protocol::rdma) return fail("prober: RDMA probes are not served by this prober");
  if (config.interval.count() <= 0) return fail("prober: interval must be positive");
  if (config.timeout.count() <= 0) return fail("prober: timeout must be positive");
  if (config.window.count() <= 0) return fail("prober: window must be positive");
  if (config.max_in_flight == 0) return fail("prober: max_in_flight must be positive");
  if (config.flows == 0 || config.flows > proto::kMaxFlowsPerWindow)
    return fail("prober: flows must be 1..{}, not {}", proto::kMaxFlowsPerWindow, config.flows);
  auto impl = std::make_unique<Impl>(config);
  impl->nflows = config.protocol == Protocol::udp ? config.flows : 1;
  auto ep = net::Epoll::create();
  if (!ep) return std::unexpected(ep.error());
  impl->ep = std::move(*ep);
  auto wake = EventFd::create();
  if (!wake) return std::unexpected(wake.error());
  impl->wake = std::move(*wake);
  if (auto st = impl->ep.add(impl->wake.fd(), EPOLLIN, Impl::tag(Impl::kWake, 0)); !st)
    return std::unexpected(st.error());
  // Even: this prober reads follow-up frames on kept-open streams (wire::stream_followups_ok).
  // Upper half kSessionCarryTag: replies may carry follow-ups (UDP, wire::replies_carry_followups_ok);
  // otherwise never that tag, so that a responder does not send them.
  const bool carry = config.carried_followups && config.protocol == Protocol::udp;
  impl->session = random_u64() & ~wire::kSessionNoStreamFollowups;
  if (carry)
    impl->session = wire::kSessionCarryTag | (impl->session & ~wire::kSessionCarryMask);
  else if (wire::replies_carry_followups_ok(impl->session))
    impl->session ^= 1ULL << 63;
  if (impl->session == 0) impl->session = 2;
  // Trace probes' session: not carry-tagged (their replies come alone), never the probes' own.
  do {
    impl->trace_session = random_u64() & ~wire::kSessionCarryMask;
  } while (impl->trace_session == 0 || impl->trace_session == impl->session);
  impl->grace_ns = config.followup_grace.count() + (carry ? wire::kCarryHoldNs : 0);
  // OPT_ID is a 32-bit counter: a power-of-two map stays consecutive across its wrap.
  impl->tx_mask = std::bit_ceil(impl->table.size()) - 1;
  impl->grace_ring.assign(impl->table.size(), 0);
  impl->interval_ns = config.interval.count();
  impl->timeout_ns = config.timeout.count();
  impl->window_ns = config.window.count();
  // Answers land in the window of their deadline, which is at most this many windows ahead.
  impl->n_windows = static_cast<size_t>(config.timeout.count() / config.window.count()) + 2;
  const uint64_t limit = net::raise_fd_limit();
  impl->tcp_cap = limit > 128 ? limit - 64 : 64;
  if (auto st = impl->open_sockets(); !st) return std::unexpected(st.error());
  return std::unique_ptr<Prober>(new Prober(std::move(impl)));
}

void Prober::set_targets(std::vector<Target> targets) {
  {
    std::lock_guard lk(impl_->mu);
    impl_->pending_targets = std::move(targets);
    impl_->has_pending.store(true);
  }
  impl_->wake.signal();
}

void Prober::set_on_probe(std::function<void(const ProbeResult&)> on_probe) {
  impl_->on_probe = std::move(on_probe);
}

void Prober::set_on_path(std::function<void(proto::PathTrace&&)> on_path) {
  impl_->on_path = std::move(on_path);
}

Status Prober::run(std::function<void(WindowStats&&)> on_window) {
  impl_->on_window = std::move(on_window);
  return impl_->loop();
}

void Prober::stop() {
  impl_->stop_flag.store(true);
  impl_->wake.signal();
}

std::string Prober::last_local_error() const {
  std::lock_guard lk(impl_->local_error_mu);
  return impl_->local_error;
}

ProberCounters Prober::counters() const {
  const auto& c = impl_->ctr;
  auto l = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  ProberCounters out;
  out.sent = l(c.sent);
  out.received = l(c.received);
  out.lost = l(c.lost);
  out.late = l(c.late);
  out.duplicate = l(c.duplicate);
  out.malformed = l(c.malformed);
  out.unknown_session = l(c.unknown_session);
  out.unknown_probe = l(c.unknown_probe);
  out.evicted = l(c.evicted);
  out.send_errors = l(c.send_errors);
  out.unsent = l(c.unsent);
  out.weird = l(c.weird);
  out.wakeups = l(c.wakeups);
  out.streaming_wakeups = l(c.streaming_wakeups);
  out.traces = l(c.traces);
  out.trace_probes = l(c.trace_probes);
  return out;
}

}  // namespace weft::probe
