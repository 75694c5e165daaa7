// The prober's event loop. One thread: schedule sends, batch them (sendmmsg), read answers and
// kernel timestamps in batches (recvmmsg, also on the error queue), resolve probes (answer,
// follow-up, timeout) and fold them into per-target windows. Nothing on the per-packet path
// allocates: buffers, the in-flight table and the windows are made once.
#include "probe/prober.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "base/clock.hpp"
#include "base/log.hpp"
#include "base/random.hpp"
#include "net/address.hpp"
#include "net/epoll.hpp"
#include "net/frame_reader.hpp"
#include "net/recv_batch.hpp"
#include "net/socket.hpp"
#include "net/stream_timestamps.hpp"
#include "net/timestamping.hpp"
#include "probe/accumulator.hpp"
#include "probe/in_flight.hpp"
#include "probe/wake_coalescer.hpp"
#include "probe/wire.hpp"

namespace weft::probe {

namespace {

constexpr int kBatch = 64;
// epoll events taken per wake-up: TCP connect probes give one per connection, and a wake-up
// every 5 ms with 64 would cap them at 12,800 a second (see the responder's kEvents).
constexpr int kEvents = 1024;
constexpr size_t kRecvBytes =
    1024;  // larger than any message (wire::kMaxFollowupsSize) so oversized ones are seen as such

// epoll data: kind in the top byte, a value below.
enum Kind : uint64_t { kWake = 1, kUdp = 2, kTcpConnect = 3, kTcpConn = 4 };
uint64_t tag(Kind k, uint64_t v) { return net::event_tag(static_cast<uint8_t>(k), v); }

struct Counters {
  std::atomic<uint64_t> sent{0}, received{0}, lost{0}, late{0}, duplicate{0}, malformed{0},
      unknown_session{0}, unknown_probe{0}, evicted{0}, send_errors{0}, unsent{0}, weird{0}, wakeups{0},
      streaming_wakeups{0};
  static void inc(std::atomic<uint64_t>& c, uint64_t n = 1) {
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
};

struct TargetState {
  Target target;
  net::SocketAddress addr;
  std::string addr_text;
  uint32_t gen = 0;
  int sock = 0;  // UDP socket index (0 = IPv4, 1 = IPv6)
  bool retired = false;
  int64_t phase_mono = 0;
  uint64_t k = 0;  // the k-th nominal send is at phase + k * interval
  uint64_t sends = 0;
  uint64_t in_flight = 0;
  std::vector<WindowAccumulator> windows;
  // Kept-open TCP connection.
  net::Fd conn;
  bool connected = false;
  int64_t connect_started_mono = 0;
  int64_t reconnect_after_mono = 0;
  std::string connect_local_error;  // why the last connect could not even start here ("" = it did)
  uint8_t rbuf[wire::kSize * 32];
  size_t rlen = 0;
  // Its transmit stamps: OPT_ID counts bytes, so a probe's key is the stream offset of its last
  // byte; the sequence numbers of the last kTxFrames probes written, by frame number.
  static constexpr size_t kTxFrames = 64;
  bool tx_stamps = false;
  net::FrameTxKeys<wire::kSize> keys;
  uint64_t tx_seq[kTxFrames];
};

struct HeapEntry {
  int64_t t;
  uint32_t index;
  uint32_t gen;
  bool operator>(const HeapEntry& o) const { return t > o.t; }
};

struct UdpSock {
  net::Fd fd;
  int family = 0;
  uint32_t tx_counter = 0;      // OPT_ID of the next datagram
  std::vector<uint64_t> txmap;  // OPT_ID & mask -> seq
  size_t targets = 0;           // targets probed from it (retired ones until released)
  bool polled = false;          // out of the epoll set, read on every wake-up (see poll_udp)
};

}  // namespace

struct Prober::Impl {
  ProberConfig cfg;
  uint64_t session = 0;
  Rng rng;
  net::Epoll ep;
  net::EventFd wake;
  UdpSock udp[2];
  net::SocketAddress bind_addr[2];
  InFlightTable table;
  uint64_t tx_mask = 0;
  uint64_t next_seq = 1, expire_cursor = 1;
  std::vector<uint64_t> grace_ring;  // answered seqs waiting for follow-ups, in answer order
  size_t grace_head = 0, grace_count = 0;

  std::vector<std::unique_ptr<TargetState>> targets;
  std::vector<uint32_t> free_ids;
  uint32_t gen_counter = 0;
  std::vector<HeapEntry> heap;
  size_t n_windows = 2;
  int64_t window_ns = 0, interval_ns = 0, timeout_ns = 0;
  int64_t offset_rt = 0;  // realtime - monotonic, fixed when run() starts
  int64_t next_flush_mono = 0;
  int64_t slack_ns = 0;     // sends due this soon are sent now (see loop())
  bool udp_polled = false;  // some UDP socket is out of the epoll set and read on every wake-up
  uint64_t tcp_open = 0, tcp_cap = 0;
  bool warned_send = false;
  mutable std::mutex local_error_mu;  // local_error is read by other threads (last_local_error)
  std::string local_error;
  int64_t local_error_at = 0;

  std::mutex mu;
  std::optional<std::vector<Target>> pending_targets;
  std::atomic<bool> has_pending{false};
  std::atomic<bool> stop_flag{false};
  Counters ctr;
  std::function<void(const ProbeResult&)> on_probe;
  std::function<void(WindowStats&&)> on_window;

  // Receive buffers.
  net::RecvBatch<kBatch, kRecvBytes, net::kControlBytes> udp_in;
  net::RecvBatch<kBatch, 0, net::kErrQueueControlBytes> tx_stamps;
  // Probes resolved by one recvmmsg batch: a reply or single follow-up resolves at most one, a
  // follow-ups message up to wire::kMaxFollowups.
  static constexpr size_t kReadyCap = kBatch * wire::kMaxFollowups;
  uint64_t ready[kReadyCap];
  size_t n_ready = 0;
  wire::Followups followups_in;
  // Send buffers.
  mmsghdr smsg[kBatch];
  iovec siov[kBatch];
  uint8_t sdata[kBatch][wire::kSize];
  uint64_t sseq[kBatch];
  int sbatch_sock = -1;
  int sbatch_n = 0;

  // The table starts small and grows with the target list, up to max_in_flight.
  explicit Impl(const ProberConfig& c) : cfg(c), table(std::min<size_t>(c.max_in_flight, 1024)) {}

  // ---- targets -------------------------------------------------------------------------------
  TargetState* target_of(const Slot& s) {
    if (s.target >= targets.size()) return nullptr;
    TargetState* t = targets[s.target].get();
    return (t && t->gen == s.target_gen) ? t : nullptr;
  }

  TargetState* target_by_addr(const sockaddr_storage& ss, socklen_t len) {
    auto a = net::SocketAddress::from_sockaddr(reinterpret_cast<const sockaddr*>(&ss), len);
    for (auto& t : targets)
      if (t && a.same_endpoint(t->addr)) return t.get();
    return nullptr;
  }

  void apply_targets(int64_t now) {
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
      if (cfg.protocol == Protocol::udp && !udp[sock].fd.valid()) {
        log().warn("prober: target '{}' ({}): no {} socket to probe from", tg.name, addr->to_string(),
                   sock ? "IPv6" : "IPv4");
        continue;
      }
      auto st = std::make_unique<TargetState>();
      st->target = std::move(tg);
      st->addr = *addr;
      st->addr_text = addr->to_string();
      st->sock = sock;
      st->gen = ++gen_counter;
      st->windows.resize(n_windows);
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
      if (cfg.protocol == Protocol::tcp && cfg.tcp_keep_open) keep_open_connect(idx, *targets[idx], now);
    }
    for (auto& [key, idx] : existing) targets[idx]->retired = true;  // no longer in the list
    count_socket_targets();
    size_t active = 0;
    for (auto& t : targets) active += (t && !t->retired) ? 1 : 0;
    // Each target has at most timeout/interval + 1 probes unresolved; room for twice that.
    const double per_target = static_cast<double>(timeout_ns) / static_cast<double>(interval_ns) + 2.0;
    grow_table(
        std::min(cfg.max_in_flight, static_cast<size_t>(2.0 * per_target * static_cast<double>(active))));
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

  void grow_table(size_t wanted) {
    const size_t before = table.size();
    table.grow(wanted);
    if (table.size() == before) return;
    tx_mask = table.size() - 1;
    for (auto& u : udp) {
      if (!u.fd.valid()) continue;
      u.txmap.assign(table.size(), 0);
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

  void close_conn(TargetState& t) {
    if (t.conn.valid()) {
      ep.remove(t.conn.get());
      t.conn.reset();
    }
    t.connected = false;
    t.rlen = 0;
    t.tx_stamps = false;
    t.keys = {};
  }

  // How many targets each UDP socket serves: one with none is never polled (see poll_udp).
  void count_socket_targets() {
    for (auto& u : udp) u.targets = 0;
    for (auto& t : targets)
      if (t) ++udp[t->sock].targets;
  }

  void release_retired() {
    for (uint32_t i = 0; i < targets.size(); ++i) {
      auto& t = targets[i];
      if (!t || !t->retired || t->in_flight != 0) continue;
      bool open = false;
      for (auto& w : t->windows) open |= w.open();
      if (open) continue;
      close_conn(*t);
      --udp[t->sock].targets;
      t.reset();
      free_ids.push_back(i);
    }
  }

  // ---- windows -------------------------------------------------------------------------------
  void emit(TargetState& t, WindowAccumulator& w) {
    if (w.empty()) {
      WindowStats scratch;
      w.finish(window_ns, scratch);
      return;
    }
    WindowStats ws;
    ws.protocol = cfg.protocol;
    ws.target = t.target.name;
    ws.target_address = t.addr_text;
    w.finish(window_ns, ws);
    if (on_window) on_window(std::move(ws));
  }

  WindowAccumulator& window_at(TargetState& t, int64_t mono) {
    const int64_t idx = window_index(mono + offset_rt, window_ns);
    auto& w = t.windows[static_cast<size_t>(idx) % n_windows];
    if (w.index() != idx) {
      if (w.open()) emit(t, w);
      w.start(idx);
    }
    return w;
  }

  void flush_windows(int64_t now) {
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

  // ---- resolution ----------------------------------------------------------------------------
  void report(const TargetState* t, const Slot& s, bool answered, const RttSample* r) {
    if (!on_probe) return;
    ProbeResult pr;
    pr.target = t ? std::string_view(t->target.name) : std::string_view();
    pr.seq = s.seq;
    pr.answered = answered;
    if (r) {
      pr.weird = r->weird;
      pr.rtt_ns = r->total_ns;
      pr.network_rtt_ns = r->has_network ? r->network_ns : 0;
      pr.responder_delay_ns = r->has_responder_delay ? r->responder_delay_ns : 0;
      pr.source = r->source;
    }
    on_probe(pr);
  }

  void close_probe_fd(Slot& s) {
    if (s.fd >= 0) {
      ::close(s.fd);  // also leaves epoll
      s.fd = -1;
      --tcp_open;
    }
  }

  int64_t deadline(const Slot& s) const { return s.timing.tx_user_mono + timeout_ns; }

  void lose(Slot& s) {
    close_probe_fd(s);
    s.state = SlotState::expired;
    TargetState* t = target_of(s);
    if (t) --t->in_flight;
    if (s.unsent) {  // this host's failure, not the network's: no window counts it
      report(t, s, false, nullptr);
      return;
    }
    Counters::inc(ctr.lost);
    if (t) window_at(*t, deadline(s)).add_lost();
    report(t, s, false, nullptr);
  }

  // A probe that could not leave this host (no descriptor, no buffer, at the connection cap).
  // Counted apart, with the reason kept (at most once a second) for last_local_error().
  void mark_unsent(Slot& s, std::string_view why) {
    s.unsent = true;
    Counters::inc(ctr.unsent);
    const int64_t now = mono_ns();
    if (now - local_error_at < 1'000'000'000 && local_error_at != 0) return;
    local_error_at = now;
    std::lock_guard lk(local_error_mu);
    local_error.assign(why);
  }

  // Failures of this host rather than of the path to the target.
  static bool is_local_failure(int err) {
    return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM || err == EADDRNOTAVAIL;
  }

  void finalize(Slot& s) {
    close_probe_fd(s);
    if (cfg.protocol == Protocol::tcp && cfg.tcp_keep_open && s.tx_id_valid &&
        !s.timing.tx_kernel.software_ns && !s.timing.tx_kernel.hardware_ns)
      keep_open_tx_stamps(s.target);  // its send stamp may be waiting on the error queue
    const RttSample r = compute_rtt(s.timing);
    TargetState* t = target_of(s);
    if (r.total_ns > timeout_ns) {  // read late by a busy loop, but it truly came too late
      s.state = SlotState::expired;
      Counters::inc(ctr.lost);
      Counters::inc(ctr.late);
      if (t) {
        --t->in_flight;
        window_at(*t, deadline(s)).add_lost();
        window_at(*t, mono_ns()).add_late();
      }
      report(t, s, false, nullptr);
      return;
    }
    s.state = SlotState::done;
    Counters::inc(ctr.received);
    if (r.weird) Counters::inc(ctr.weird);
    if (t) {
      --t->in_flight;
      window_at(*t, deadline(s)).add_answer(r);
    }
    report(t, s, true, &r);
  }

  void expire(int64_t now) {
    while (expire_cursor < next_seq) {
      Slot& s = table.at(expire_cursor);
      if (s.seq == expire_cursor && (s.state == SlotState::pending || s.state == SlotState::answered)) {
        if (deadline(s) > now) break;
        if (s.state == SlotState::pending)
          lose(s);
        else
          finalize(s);
      }
      ++expire_cursor;
    }
  }

  void grace_push(uint64_t seq) {
    if (grace_count == grace_ring.size()) {  // full: resolve the oldest now
      Slot* s = table.find(grace_ring[grace_head]);
      if (s && s->state == SlotState::answered) finalize(*s);
      grace_head = (grace_head + 1) % grace_ring.size();
      --grace_count;
    }
    grace_ring[(grace_head + grace_count) % grace_ring.size()] = seq;
    ++grace_count;
  }

  void grace_sweep(int64_t now) {
    const int64_t grace = cfg.followup_grace.count();
    while (grace_count > 0) {
      Slot* s = table.find(grace_ring[grace_head]);
      if (s && s->state == SlotState::answered) {
        if (s->timing.rx_user_mono + grace > now) break;
        finalize(*s);
      }
      grace_head = (grace_head + 1) % grace_ring.size();
      --grace_count;
    }
  }

  int64_t grace_next() {
    while (grace_count > 0) {
      Slot* s = table.find(grace_ring[grace_head]);
      if (s && s->state == SlotState::answered) return s->timing.rx_user_mono + cfg.followup_grace.count();
      grace_head = (grace_head + 1) % grace_ring.size();
      --grace_count;
    }
    return INT64_MAX;
  }

  int64_t expire_next() {
    while (expire_cursor < next_seq) {
      Slot& s = table.at(expire_cursor);
      if (s.seq == expire_cursor && (s.state == SlotState::pending || s.state == SlotState::answered))
        return deadline(s);
      ++expire_cursor;
    }
    return INT64_MAX;
  }

  // A new slot for the next sequence number, evicting an unresolved probe if the table is full.
  Slot& new_slot(uint32_t tindex, TargetState& t, int64_t tx_mono) {
    const uint64_t seq = next_seq++;
    Slot& s = table.at(seq);
    if (s.state == SlotState::pending) {
      Counters::inc(ctr.evicted);
      lose(s);
    } else if (s.state == SlotState::answered) {
      finalize(s);
    }
    s = Slot{};
    s.seq = seq;
    s.state = SlotState::pending;
    s.target = tindex;
    s.target_gen = t.gen;
    s.timing.tx_user_mono = tx_mono;
    ++t.in_flight;
    Counters::inc(ctr.sent);
    return s;
  }

  // ---- UDP -----------------------------------------------------------------------------------
  void udp_flush_batch() {
    if (sbatch_n == 0) return;
    UdpSock& u = udp[sbatch_sock];
    const int sbatch_sock_sent = sbatch_sock;
    const int n = sbatch_n;
    sbatch_n = 0;
    const int64_t tx_rt = realtime_ns(), tx_mono = mono_ns();
    for (int i = 0; i < n; ++i) {
      const uint32_t tindex = static_cast<uint32_t>(sseq[i]);
      TargetState& t = *targets[tindex];
      Slot& s = new_slot(tindex, t, tx_mono);
      s.sock = static_cast<uint8_t>(sbatch_sock);
      sseq[i] = s.seq;
      wire::Packet p;
      p.type = wire::Type::probe;
      p.session = session;
      p.seq = s.seq;
      p.prober_tx_ns = tx_rt;
      wire::encode(p, std::span<uint8_t, wire::kSize>(sdata[i], wire::kSize));
      siov[i] = {sdata[i], wire::kSize};
      smsg[i] = {};
      smsg[i].msg_hdr.msg_name = t.addr.sa();
      smsg[i].msg_hdr.msg_namelen = t.addr.length;
      smsg[i].msg_hdr.msg_iov = &siov[i];
      smsg[i].msg_hdr.msg_iovlen = 1;
    }
    int done = 0;
    while (done < n) {
      int r = sendmmsg(u.fd.get(), smsg + done, static_cast<unsigned>(n - done), 0);
      if (r <= 0) {
        // This datagram failed (buffer full, no route...): it stays pending and will count as lost.
        if (!warned_send) {
          log().warn("prober: send to {} failed: {}", targets[table.at(sseq[done]).target]->addr_text,
                     std::strerror(errno));
          warned_send = true;
        }
        Counters::inc(ctr.send_errors);
        if (is_local_failure(errno))
          mark_unsent(table.at(sseq[done]), fmt::format("UDP send: {}", std::strerror(errno)));
        ++done;
        continue;
      }
      for (int i = done; i < done + r; ++i) {
        Slot& s = table.at(sseq[i]);
        s.tx_id = u.tx_counter;
        s.tx_id_valid = true;
        u.txmap[u.tx_counter & tx_mask] = s.seq;
        ++u.tx_counter;
      }
      done += r;
    }
    drain_errqueue(sbatch_sock_sent);
  }

  void udp_queue(uint32_t tindex, TargetState& t) {
    if (sbatch_n > 0 && (sbatch_sock != t.sock || sbatch_n == kBatch)) udp_flush_batch();
    sbatch_sock = t.sock;
    sseq[sbatch_n++] = tindex;  // the target index until the batch is flushed
  }

  void drain_errqueue(int sidx) {
    UdpSock& u = udp[sidx];
    for (;;) {
      const int r = tx_stamps.read(u.fd.get(), MSG_ERRQUEUE);
      if (r == 0) return;
      for (int i = 0; i < r; ++i) {
        net::TxTimestamp ts;
        if (!net::parse_tx_timestamp(tx_stamps.header(static_cast<size_t>(i)), ts)) continue;
        const uint64_t seq = u.txmap[ts.id & tx_mask];
        Slot* s = table.find(seq);
        if (s && s->tx_id_valid && s->tx_id == ts.id && s->sock == sidx) s->timing.tx_kernel = ts.time;
      }
      if (r < kBatch) return;
    }
  }

  void udp_malformed(int i) {
    Counters::inc(ctr.malformed);
    if (TargetState* t = target_by_addr(udp_in.sender(i), udp_in.sender_length(i)))
      window_at(*t, mono_ns()).add_malformed();
  }

  // The responder's kernel receive/send pair for one of our probes (UDP and kept-open TCP).
  // Returns true when it completes an answered probe, which the caller then resolves.
  bool apply_followup(uint64_t seq, uint8_t flags, int64_t responder_rx_ns, int64_t responder_tx_ns,
                      int64_t rx_mono) {
    Slot* s = table.find(seq);
    if (!s) return false;   // older than the table remembers: far too slow to use
    if (s->has_followup) {  // a second copy, before or after the probe was resolved
      Counters::inc(ctr.duplicate);
      if (TargetState* t = target_of(*s)) window_at(*t, rx_mono).add_duplicate();
      return false;
    }
    if (s->state != SlotState::pending && s->state != SlotState::answered)
      return false;  // resolved without it
    s->has_followup = true;
    s->timing.responder_rx_ns = responder_rx_ns;
    s->timing.responder_tx_ns = responder_tx_ns;
    s->timing.responder_flags = flags;
    return s->state == SlotState::answered;
  }

  void udp_followups(int i, int64_t rx_mono) {
    const auto& h = udp_in.header(i);
    wire::Followups& f = followups_in;
    if ((h.msg_flags & MSG_TRUNC) || wire::decode_followups(udp_in.data(i), f) != wire::ParseError::ok) {
      udp_malformed(i);
      return;
    }
    if (f.session != session) {
      Counters::inc(ctr.unknown_session);
      if (TargetState* t = target_by_addr(udp_in.sender(i), udp_in.sender_length(i)))
        window_at(*t, rx_mono).add_malformed();
      return;
    }
    for (size_t k = 0; k < f.count; ++k) {
      const wire::FollowupEntry& e = f.entries[k];
      if (e.seq >= next_seq) {  // one bad entry spoils the message: it cannot be ours
        Counters::inc(ctr.unknown_probe);
        if (TargetState* t = target_by_addr(udp_in.sender(i), udp_in.sender_length(i)))
          window_at(*t, rx_mono).add_malformed();
        return;
      }
    }
    for (size_t k = 0; k < f.count; ++k)
      if (apply_followup(f.entries[k].seq, f.flags, f.entries[k].responder_rx_ns,
                         f.entries[k].responder_tx_ns, rx_mono))
        ready[n_ready++] = f.entries[k].seq;
  }

  void udp_datagram(int i, int64_t rx_mono) {
    const auto& h = udp_in.header(i);
    if (wire::is_followups(udp_in.data(i))) {
      udp_followups(i, rx_mono);
      return;
    }
    wire::Packet p;
    if ((h.msg_flags & MSG_TRUNC) || wire::decode(udp_in.data(i), p) != wire::ParseError::ok ||
        p.type == wire::Type::probe) {
      udp_malformed(i);
      return;
    }
    if (p.session != session) {
      Counters::inc(ctr.unknown_session);
      if (TargetState* t = target_by_addr(udp_in.sender(i), udp_in.sender_length(i)))
        window_at(*t, rx_mono).add_malformed();
      return;
    }
    if (p.seq >= next_seq) {
      Counters::inc(ctr.unknown_probe);
      if (TargetState* t = target_by_addr(udp_in.sender(i), udp_in.sender_length(i)))
        window_at(*t, rx_mono).add_malformed();
      return;
    }
    Slot* s = table.find(p.seq);
    if (!s) {  // older than the table remembers: it can only be late
      if (p.type == wire::Type::reply) {
        Counters::inc(ctr.late);
        if (TargetState* t = target_by_addr(udp_in.sender(i), udp_in.sender_length(i)))
          window_at(*t, rx_mono).add_late();
      }
      return;
    }
    TargetState* t = target_of(*s);
    if (p.type == wire::Type::reply) {
      switch (s->state) {
        case SlotState::pending: {
          net::parse_rx_time(h, s->timing.rx_kernel);
          s->timing.rx_user_mono = rx_mono;
          s->timing.has_responder = true;
          if (!s->has_followup) {  // a follow-up that came first already holds better times
            s->timing.responder_rx_ns = p.responder_rx_ns;
            s->timing.responder_tx_ns = p.responder_tx_ns;
            s->timing.responder_flags = p.flags;
          }
          s->state = SlotState::answered;
          if (s->has_followup || !(p.flags & wire::kFollowupComing))
            ready[n_ready++] = p.seq;
          else
            grace_push(p.seq);
          break;
        }
        case SlotState::answered:
        case SlotState::done:
          Counters::inc(ctr.duplicate);
          if (t) window_at(*t, rx_mono).add_duplicate();
          break;
        case SlotState::expired:
          Counters::inc(ctr.late);
          if (t) window_at(*t, rx_mono).add_late();
          break;
        case SlotState::empty:
          break;
      }
      return;
    }
    // Follow-up: the responder's kernel receive/send pair for this probe. One after the probe was
    // resolved is just too slow to use.
    if (apply_followup(p.seq, p.flags, p.responder_rx_ns, p.responder_tx_ns, rx_mono))
      ready[n_ready++] = p.seq;
  }

  void udp_readable(int sidx, uint32_t events) {
    UdpSock& u = udp[sidx];
    if (events & EPOLLERR) drain_errqueue(sidx);
    if (!(events & EPOLLIN)) return;
    for (int rounds = 0; rounds < 16; ++rounds) {
      const int r = udp_in.read(u.fd.get());
      if (r == 0) return;
      const int64_t rx_mono = mono_ns();
      n_ready = 0;
      for (int i = 0; i < r; ++i) udp_datagram(i, rx_mono);
      if (n_ready > 0) {
        // The probes' own send timestamps were queued before their answers could exist.
        // (Neither drain_errqueue nor finalize touches `ready`.)
        bool missing = false;
        for (size_t j = 0; j < n_ready; ++j) {
          Slot* s = table.find(ready[j]);
          missing |= s && s->tx_id_valid && s->timing.tx_kernel.software_ns == 0 &&
                     s->timing.tx_kernel.hardware_ns == 0;
        }
        if (missing) drain_errqueue(sidx);
        for (size_t j = 0; j < n_ready; ++j) {
          Slot* s = table.find(ready[j]);
          if (s && s->state == SlotState::answered) finalize(*s);
        }
      }
      if (r < kBatch) return;
    }
  }

  // ---- TCP connect probes --------------------------------------------------------------------
  void tcp_start(uint32_t tindex, TargetState& t) {
    const int64_t tx_mono = mono_ns();
    Slot& s = new_slot(tindex, t, tx_mono);
    if (tcp_open >= tcp_cap) {
      Counters::inc(ctr.send_errors);
      mark_unsent(s, fmt::format("{} TCP connect probes already open (the cap)", tcp_cap));
      return;  // stays pending until its deadline, counted in no window
    }
    auto fd = net::tcp_connect_start(bind_addr[t.sock], t.addr);
    if (!fd) {
      if (!warned_send) {
        log().warn("prober: {}", fd.error().message);
        warned_send = true;
      }
      Counters::inc(ctr.send_errors);
      if (is_local_failure(fd.error().code)) mark_unsent(s, fd.error().message);
      return;
    }
    s.fd = fd->release();
    ++tcp_open;
    if (auto st = ep.add(s.fd, EPOLLOUT, tag(kTcpConnect, s.seq)); !st) {
      close_probe_fd(s);
      Counters::inc(ctr.send_errors);
    }
  }

  void tcp_connected(uint64_t seq) {
    Slot* s = table.find(seq);
    if (!s || s->state != SlotState::pending || s->fd < 0) return;
    s->timing.rx_user_mono = mono_ns();
    if (net::socket_error(s->fd) != 0) {  // refused or unreachable: no answer, lost at the deadline
      close_probe_fd(*s);
      return;
    }
    tcp_info info{};
    socklen_t len = sizeof info;
    // The kernel's first RTT sample of a fresh connection is its SYN -> SYN/ACK time.
    if (getsockopt(s->fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 && info.tcpi_rtt > 0)
      s->timing.kernel_rtt_ns = static_cast<int64_t>(info.tcpi_rtt) * 1000;
    s->state = SlotState::answered;
    finalize(*s);
  }

  // ---- TCP kept-open connections -------------------------------------------------------------
  // Request/echo on one connection per target, timed like UDP: the probe's kernel send stamp
  // comes back on the connection's error queue under its byte offset (stream_timestamps.hpp), the
  // answer's receive stamp with the read (one per read: frame_reader.hpp), and a responder that
  // knows how sends its kernel times in a follow-up frame after the reply (two-step, as on UDP).
  void keep_open_connect(uint32_t tindex, TargetState& t, int64_t now) {
    auto fd = net::tcp_connect_start(bind_addr[t.sock], t.addr);
    t.reconnect_after_mono = now + std::max<int64_t>(interval_ns, 100'000'000);
    if (!fd) {
      if (is_local_failure(fd.error().code)) t.connect_local_error = fd.error().message;
      return;
    }
    t.connect_local_error.clear();
    linger lg{0, 0};  // a kept-open connection closes normally
    setsockopt(fd->get(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    // Receive stamps from the start; transmit stamps once connected (OPT_ID needs a connection).
    (void)net::enable_timestamping(fd->get(), false);
    t.conn = std::move(*fd);
    t.connected = false;
    t.connect_started_mono = now;
    t.rlen = 0;
    if (!ep.add(t.conn.get(), EPOLLOUT | EPOLLIN, tag(kTcpConn, tindex))) close_conn(t);
  }

  void keep_open_send(uint32_t tindex, TargetState& t, int64_t now) {
    if (t.conn.valid() && !t.connected) {
      if (now - t.connect_started_mono < timeout_ns) return;  // still connecting: not a probe yet
      close_conn(t);  // the handshake took longer than a probe may: this probe is lost
    }
    if (!t.conn.valid() && now >= t.reconnect_after_mono) keep_open_connect(tindex, t, now);
    const int64_t tx_rt = realtime_ns(), tx_mono = mono_ns();
    Slot& s = new_slot(tindex, t, tx_mono);
    if (!t.connected) {
      Counters::inc(ctr.send_errors);
      // No connection because this host could not open one: not the network's loss.
      if (!t.conn.valid() && !t.connect_local_error.empty()) mark_unsent(s, t.connect_local_error);
      return;  // lost at its deadline
    }
    wire::Packet p;
    p.type = wire::Type::probe;
    p.session = session;
    p.seq = s.seq;
    p.prober_tx_ns = tx_rt;
    uint8_t buf[wire::kSize];
    wire::encode(p, std::span<uint8_t, wire::kSize>(buf, wire::kSize));
    const uint32_t key = t.keys.next_key();
    // MSG_EOR: no later write joins this probe's packet (which carries one transmit stamp).
    ssize_t n = ::send(t.conn.get(), buf, sizeof buf, MSG_NOSIGNAL | MSG_DONTWAIT | MSG_EOR);
    if (n != static_cast<ssize_t>(sizeof buf)) {
      Counters::inc(ctr.send_errors);
      close_conn(t);  // a partial frame would desynchronise the stream
      return;
    }
    if (t.tx_stamps) {
      t.tx_seq[t.keys.frames() % TargetState::kTxFrames] = s.seq;
      s.tx_id = key;
      s.tx_id_valid = true;
    }
    t.keys.wrote_frame();
  }

  // Reads the send stamps waiting on a kept-open connection into their probes' slots.
  size_t keep_open_tx_stamps(uint32_t tindex) {
    if (tindex >= targets.size() || !targets[tindex]) return 0;
    TargetState& t = *targets[tindex];
    if (!t.conn.valid() || !t.tx_stamps) return 0;
    return net::read_tx_timestamps(t.conn.get(), [&](const net::TxTimestamp& ts) {
      const int64_t frame = t.keys.frame_of(ts.id, TargetState::kTxFrames);
      if (frame < 0) return;
      Slot* s = table.find(t.tx_seq[static_cast<uint64_t>(frame) % TargetState::kTxFrames]);
      // The first stamp is when the probe left; a retransmission may stamp the same bytes again.
      if (s && s->tx_id_valid && s->tx_id == ts.id && s->target == tindex && s->target_gen == t.gen &&
          !s->timing.tx_kernel.software_ns && !s->timing.tx_kernel.hardware_ns)
        s->timing.tx_kernel = ts.time;
    });
  }

  void keep_open_event(uint32_t tindex, uint32_t events) {
    if (tindex >= targets.size() || !targets[tindex]) return;
    TargetState& t = *targets[tindex];
    if (!t.conn.valid()) return;
    if (!t.connected) {
      if (net::socket_error(t.conn.get()) != 0 || (events & (EPOLLERR | EPOLLHUP))) {
        close_conn(t);
        return;
      }
      t.connected = true;
      // Nothing written yet: the byte counter starts at the first probe.
      t.tx_stamps = net::enable_stream_timestamping(t.conn.get()).has_value();
      t.keys = {};
      (void)ep.modify(t.conn.get(), EPOLLIN, tag(kTcpConn, tindex));
    }
    size_t stamps = 0;
    if (events & EPOLLERR) stamps = keep_open_tx_stamps(tindex);
    // EPOLLERR with no stamp waiting is a real error: reading reports it and closes.
    if (!(events & (EPOLLIN | EPOLLHUP)) && !((events & EPOLLERR) && stamps == 0)) return;
    const bool open = net::read_frames<wire::kSize>(
        t.conn.get(), t.rbuf, sizeof t.rbuf, t.rlen,
        [&](std::span<const uint8_t, wire::kSize> frame, const net::KernelTime& kt) {
          return keep_open_frame(tindex, t, frame, kt);
        });
    if (!open) close_conn(t);
  }

  // One frame from a kept-open connection; false when the stream cannot be trusted any more.
  bool keep_open_frame(uint32_t tindex, TargetState& t, std::span<const uint8_t, wire::kSize> frame,
                       const net::KernelTime& kt) {
    const int64_t rx_mono = mono_ns();
    wire::Packet p;
    if (wire::decode(frame, p) != wire::ParseError::ok || p.type == wire::Type::probe) {
      Counters::inc(ctr.malformed);
      window_at(t, rx_mono).add_malformed();
      return false;  // a stream out of step cannot be trusted any more
    }
    if (p.session != session) {
      Counters::inc(ctr.unknown_session);
      return true;
    }
    Slot* s = p.seq < next_seq ? table.find(p.seq) : nullptr;
    if (p.seq >= next_seq || (s && (s->target != tindex || s->target_gen != t.gen))) {
      Counters::inc(ctr.unknown_probe);  // never sent, or sent to another target
      return true;
    }
    if (!s) {  // older than the table remembers: a reply can only be late, a follow-up is useless
      if (p.type == wire::Type::reply) {
        Counters::inc(ctr.late);
        window_at(t, rx_mono).add_late();
      }
      return true;
    }
    if (p.type == wire::Type::followup) {
      if (apply_followup(p.seq, p.flags, p.responder_rx_ns, p.responder_tx_ns, rx_mono)) finalize(*s);
      return true;
    }
    switch (s->state) {
      case SlotState::pending:
        // kt is empty when this reply was read together with a later frame (frame_reader.hpp):
        // its arrival time is then not known to the kernel's precision, and the RTT is user time.
        s->timing.rx_kernel = kt;
        s->timing.rx_user_mono = rx_mono;
        s->timing.has_responder = true;
        if (!s->has_followup) {
          s->timing.responder_rx_ns = p.responder_rx_ns;
          s->timing.responder_tx_ns = p.responder_tx_ns;
          s->timing.responder_flags = p.flags;
        }
        s->state = SlotState::answered;
        // A reply without "follow-up coming" (an older responder, or one out of room) is final.
        if (s->has_followup || !(p.flags & wire::kFollowupComing))
          finalize(*s);
        else
          grace_push(p.seq);
        break;
      case SlotState::expired:
        Counters::inc(ctr.late);
        window_at(t, rx_mono).add_late();
        break;
      case SlotState::answered:
      case SlotState::done:
        Counters::inc(ctr.duplicate);
        window_at(t, rx_mono).add_duplicate();
        break;
      case SlotState::empty:
        break;
    }
    return true;
  }

  // ---- sending schedule ----------------------------------------------------------------------
  // Restores the heap after the earliest entry's time moved later: one pass down the tree,
  // instead of a pop and a push for every send.
  void heap_sift_down_top() {
    const size_t n = heap.size();
    size_t i = 0;
    const HeapEntry moving = heap[0];
    for (;;) {
      size_t c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && heap[c + 1].t < heap[c].t) ++c;
      if (!(heap[c].t < moving.t)) break;
      heap[i] = heap[c];
      i = c;
    }
    heap[i] = moving;
  }

  void heap_pop_top() {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    heap.pop_back();
  }

  void send_due(int64_t now) {
    const int64_t limit = now + slack_ns;
    while (!heap.empty() && heap.front().t <= limit) {
      const HeapEntry e = heap.front();
      if (e.index >= targets.size() || !targets[e.index]) {
        heap_pop_top();
        continue;
      }
      TargetState& t = *targets[e.index];
      if (t.gen != e.gen || t.retired) {
        heap_pop_top();
        continue;
      }
      if (cfg.protocol == Protocol::udp)
        udp_queue(e.index, t);
      else if (cfg.tcp_keep_open)
        keep_open_send(e.index, t, now);
      else
        tcp_start(e.index, t);
      if (cfg.count != 0 && ++t.sends >= cfg.count) {  // done: not rescheduled
        heap_pop_top();
        continue;
      }
      // Next nominal slot plus up to +/-5% jitter. After a stall longer than an interval (and
      // 20 ms), the missed slots are skipped rather than sent in a burst.
      ++t.k;
      int64_t nominal = t.phase_mono + static_cast<int64_t>(t.k) * interval_ns;
      if (nominal < now - std::max<int64_t>(interval_ns, 20'000'000)) {
        t.k = static_cast<uint64_t>((now - t.phase_mono) / interval_ns) + 1;
        nominal = t.phase_mono + static_cast<int64_t>(t.k) * interval_ns;
      }
      heap.front().t = nominal + rng.symmetric(interval_ns / 20);
      heap_sift_down_top();
    }
    udp_flush_batch();
  }

  Status open_sockets() {
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
    for (int f = 0; f < 2; ++f) {
      if (bind_addr[f].length == 0) continue;
      auto fd = net::udp_socket(bind_addr[f]);
      if (!fd) {
        if (!cfg.bind_address.empty()) return fail("prober: {}", fd.error().message);
        log().debug("prober: no {} socket: {}", f ? "IPv6" : "IPv4", fd.error().message);
        continue;
      }
      if (f == 1) {  // this one only for IPv6 targets; IPv4 ones use the IPv4 socket
        int one = 1;
        setsockopt(fd->get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
      }
      if (auto st = net::enable_timestamping(fd->get(), true); !st)
        log().warn("prober: kernel timestamps unavailable ({}), using the user-space clock",
                   st.error().message);
      udp[f].fd = std::move(*fd);
      udp[f].family = f ? AF_INET6 : AF_INET;
      udp[f].txmap.assign(table.size(), 0);
      if (auto st = ep.add(udp[f].fd.get(), EPOLLIN, tag(kUdp, static_cast<uint64_t>(f))); !st) return st;
    }
    if (!udp[0].fd.valid() && !udp[1].fd.valid()) return fail("prober: no UDP socket could be opened");
    return {};
  }

  // While a stream flows, the UDP sockets leave the epoll set and are read on every wake-up
  // instead: every datagram and every transmit stamp queued on a socket in an epoll set calls
  // epoll's callback (a lock and a check), several per probe, and a streaming loop wakes on its
  // own timer anyway. Back in the set as soon as the load is light, so answers are read at once.
  // A socket without targets stays in the set (nothing of ours arrives there; it costs no reads).
  void poll_udp(bool streaming) {
    udp_polled = false;
    for (int f = 0; f < 2; ++f) {
      UdpSock& u = udp[f];
      if (!u.fd.valid()) continue;
      const bool want = streaming && u.targets > 0;
      if (want != u.polled) {
        if (want)
          ep.remove(u.fd.get());
        else
          (void)ep.add(u.fd.get(), EPOLLIN, tag(kUdp, static_cast<uint64_t>(f)));
        u.polled = want;
      }
      udp_polled |= want;
    }
  }

  Status loop() {
    std::vector<epoll_event> event_buf(kEvents);  // once per run()
    epoll_event* events = event_buf.data();
    offset_rt = realtime_ns() - mono_ns();
    next_flush_mono = 0;
    // Kept-open TCP reads each answer as it comes: a stream has one receive stamp per read, so an
    // answer read together with a later frame loses its own (frame_reader.hpp). It never coalesces.
    const bool coalescing = !(cfg.protocol == Protocol::tcp && cfg.tcp_keep_open);
    CoalescingWait waiter(coalescing ? cfg.coalesce.count() : 0, coalescing ? cfg.max_coalesce.count() : 0);
    while (!stop_flag.load(std::memory_order_relaxed)) {
      const int64_t coalesce = waiter.period_ns();
      // Sends due within one coalescing period go out together (slack 0: every send on time).
      slack_ns = cfg.batch_slack.count() == 0 ? 0 : std::max<int64_t>(cfg.batch_slack.count(), coalesce);
      int64_t now = mono_ns();
      if (has_pending.load(std::memory_order_relaxed)) apply_targets(now);
      send_due(now);
      now = mono_ns();
      grace_sweep(now);
      expire(now);
      flush_windows(now);
      int64_t next = now + 100'000'000;  // stop() is noticed within this
      if (!heap.empty()) next = std::min(next, heap.front().t - slack_ns / 2);
      next = std::min({next, expire_next(), grace_next(), next_flush_mono});
      if (udp_polled) next = std::min(next, waiter.next_wake_ns());
      auto n = waiter.wait(ep, events, kEvents, next);
      if (!n) return std::unexpected(n.error());
      for (int i = 0; i < *n; ++i) {
        const uint64_t d = events[i].data.u64;
        const auto kind = static_cast<Kind>(net::event_kind(d));
        const uint64_t v = net::event_value(d);
        switch (kind) {
          case kWake:
            wake.drain();
            break;
          case kUdp:
            udp_readable(static_cast<int>(v), events[i].events);
            break;
          case kTcpConnect:
            tcp_connected(v);
            break;
          case kTcpConn:
            keep_open_event(static_cast<uint32_t>(v), events[i].events);
            break;
        }
      }
      Counters::inc(ctr.wakeups);
      if (udp_polled) {
        Counters::inc(ctr.streaming_wakeups);
        for (int f = 0; f < 2; ++f)
          if (udp[f].polled) udp_readable(f, EPOLLIN | EPOLLERR);
      }
      waiter.handled(ctr.sent.load(std::memory_order_relaxed) + ctr.received.load(std::memory_order_relaxed));
      poll_udp(waiter.streaming());
    }
    return {};
  }
};

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
  auto impl = std::make_unique<Impl>(config);
  auto ep = net::Epoll::create();
  if (!ep) return std::unexpected(ep.error());
  impl->ep = std::move(*ep);
  auto wake = net::EventFd::create();
  if (!wake) return std::unexpected(wake.error());
  impl->wake = std::move(*wake);
  if (auto st = impl->ep.add(impl->wake.fd(), EPOLLIN, tag(kWake, 0)); !st)
    return std::unexpected(st.error());
  // Even: this prober reads follow-up frames on kept-open streams (wire::stream_followups_ok).
  impl->session = random_u64() & ~wire::kSessionNoStreamFollowups;
  if (impl->session == 0) impl->session = 2;
  impl->tx_mask = impl->table.size() - 1;
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
  return out;
}

}  // namespace weft::probe
