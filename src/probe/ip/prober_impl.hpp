#pragma once
// The IP prober's state (Prober::Impl), shared by the files that implement it: set-up
// (prober_setup.cpp), the event loop and schedule (prober_loop.cpp) and one file per kind of probe
// (udp_probes.cpp, tcp_connect_probes.cpp, tcp_stream_probes.cpp). The helpers every probe passes
// through (new slot, resolution, windows) are defined here, in the class, so that each of those
// files inlines them: split across translation units as real calls they cost 13 % more
// instructions per probe (docs/BENCHMARKS.md, "Probe and agent"; bench/probe-callgrind.sh is the
// gate). Nothing on the per-packet path allocates: buffers, the in-flight table and the windows
// are made once. Private to src/probe/ip: the public interface is probe/ip/prober.hpp.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.hpp"
#include "base/random.hpp"
#include "net/address.hpp"
#include "net/epoll.hpp"
#include "net/recv_batch.hpp"
#include "net/socket.hpp"
#include "net/stream_timestamps.hpp"
#include "net/timestamping.hpp"
#include "probe/accumulator.hpp"
#include "probe/ip/in_flight.hpp"
#include "probe/ip/prober.hpp"
#include "probe/wire.hpp"

namespace weft::probe {

struct Prober::Impl {
  static constexpr int kBatch = 64;
  // epoll events taken per wake-up: TCP connect probes give one per connection, and a wake-up
  // every 5 ms with 64 would cap them at 12,800 a second (see the responder's kEvents).
  static constexpr int kEvents = 1024;
  // Larger than any message (wire::kMaxReplyFollowupsSize) so that oversized ones are seen as such.
  static constexpr size_t kRecvBytes = wire::kMaxReplyFollowupsSize + 64;

  // epoll data: kind in the top byte, a value below.
  enum Kind : uint64_t { kWake = 1, kUdp = 2, kTcpConnect = 3, kTcpConn = 4 };
  static uint64_t tag(Kind k, uint64_t v) { return net::event_tag(static_cast<uint8_t>(k), v); }

  struct Counters {
    std::atomic<uint64_t> sent{0}, received{0}, lost{0}, late{0}, duplicate{0}, malformed{0},
        unknown_session{0}, unknown_probe{0}, evicted{0}, send_errors{0}, unsent{0}, weird{0}, wakeups{0},
        streaming_wakeups{0}, traces{0}, trace_probes{0};
    static void inc(std::atomic<uint64_t>& c, uint64_t n = 1) {
      c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
  };

  // A kept-open TCP connection (--keep-open only): allocated with its target, absent otherwise.
  struct KeptOpen {
    Fd conn;
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

  // What every probe touches fills the first cache line (64 bytes, aligned), then comes the address
  // its datagrams go to, then what only set-up, logs and reports read. The kept-open connection's
  // ~2 KB live apart: inline, they spread 100 UDP targets over 240 KB (60 pages) and each target's
  // hot fields over three cache lines, which a wake-up, its caches and TLB cold after the sleep,
  // paid for (issue 17, the last few % at 1,000 probes/s).
  struct alignas(64) TargetState {
    uint32_t gen = 0;
    uint8_t sock =
        0;  // address family index (0 = IPv4, 1 = IPv6); its UDP sockets are udp[sock * nflows + flow]
    bool retired = false;
    int64_t phase_mono = 0;
    uint64_t k = 0;  // the k-th nominal send is at phase + k * interval
    uint64_t sends = 0;
    uint64_t in_flight = 0;
    std::vector<WindowAccumulator> windows;
    net::SocketAddress addr;
    Target target;
    std::string addr_text;
    std::unique_ptr<KeptOpen> kept;  // --keep-open only
    // Paris traceroute (paris_trace.cpp), per flow: when it was last traced (monotonic ns; 0 never)
    // and whether it started losing since (trace it next).
    std::vector<int64_t> traced_mono;
    std::vector<uint8_t> trace_urgent;
    // Each flow's previous trace (hops, reached), to notice a changed path.
    std::vector<std::vector<std::string>> traced_hops;
    std::vector<uint8_t> traced_reached;
  };

  struct HeapEntry {
    int64_t t;
    uint32_t index;
    uint32_t gen;
    bool operator>(const HeapEntry& o) const { return t > o.t; }
  };

  struct UdpSock {
    Fd fd;
    int family = 0;
    uint16_t port = 0;            // its local port: the source port of its flow
    uint32_t tx_counter = 0;      // OPT_ID of the next datagram
    std::vector<uint64_t> txmap;  // OPT_ID & mask -> seq
    size_t targets = 0;           // targets probed from it (retired ones until released)
    bool polled = false;          // out of the epoll set, read on every wake-up (see poll_udp)
    // Sent datagrams whose transmit stamps have not been read (0 also after a read found the error
    // queue empty): a streaming wake-up reads the error queue only when this is not 0.
    uint64_t unstamped = 0;
  };

  ProberConfig cfg;
  uint64_t session = 0;
  Rng rng;
  net::Epoll ep;
  EventFd wake;
  // UDP sockets: nflows per address family, IPv4 first (index family * nflows + flow); sized once
  // in create().
  std::vector<UdpSock> udp;
  size_t nflows = 1;
  std::vector<uint16_t> flow_ports[2];  // per family, the source port of each flow (for windows)
  net::SocketAddress bind_addr[2];
  InFlightTable table;
  uint64_t tx_mask = 0;
  uint64_t next_seq = 1, expire_cursor = 1;
  std::vector<uint64_t> grace_ring;  // answered seqs waiting for follow-ups, in answer order
  int64_t grace_ns = 0;              // how long they wait (followup_grace, + the carry hold)
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
  // Connect-probe sockets whose probe is over, disconnected (connect to AF_UNSPEC: a RST, as a
  // close with SO_LINGER 0 sends) and kept for the next probe of their address family, which then
  // skips socket(), SO_LINGER and close(): allocating and freeing a socket was about a quarter of
  // a connect probe's cost at 40,000/s (issue 17). Each stays in the epoll set, one-shot, disarmed
  // until its next connect. At most kTcpSpare per family, and never past tcp_cap open in all.
  static constexpr size_t kTcpSpare = 1024;
  std::vector<Fd> tcp_spare[2];
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
  std::function<void(proto::PathTrace&&)> on_path;

  // Paris traceroute state (paris_trace.cpp): at most one trace, and one hop of it, in flight.
  struct Trace {
    bool active = false;
    uint32_t target = 0, gen = 0;
    size_t flow = 0;
    int ttl = 0;                // of the hop in flight
    bool hop_answered = false;  // the hop in flight got its answer
    int64_t hop_sent_mono = 0;
    int64_t started_rt = 0;
    uint64_t id = 0;       // trace number, in the probe's seq: (id << 8) | ttl
    bool reached = false;  // the target answered
    bool ended = false;    // an unreachable answer: nothing lies past it
    std::vector<std::string> hops;
  } trace;
  uint64_t trace_session = 0;  // trace probes' session: their answers are told apart, never counted
  int64_t next_trace_mono = 0;
  size_t trace_cursor = 0;  // round-robin over (target, flow)
  // Flows whose path just changed, traced again soon (ProberConfig::trace_follow_gap).
  struct Followed {
    uint32_t target = 0, gen = 0;
    size_t flow = 0;
    int64_t until_mono = 0;  // followed while now < until_mono
  };
  std::array<Followed, ProberConfig::kMaxFollowedFlows> followed{};
  unsigned follow_run = 0;  // follow-ups picked in a row (at most 2 before another flow's turn)

  // Receive buffers.
  net::RecvBatch<kBatch, kRecvBytes, net::kControlBytes> udp_in;
  net::RecvBatch<kBatch, 0, net::kErrQueueControlBytes> tx_stamps;
  // Probes resolved by one recvmmsg batch: a reply or single follow-up resolves at most one, a
  // follow-ups message up to wire::kMaxFollowups, a reply carrying follow-ups one more.
  static constexpr size_t kReadyCap = kBatch * (wire::kMaxFollowups + 1);
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

  // ---- Set-up: targets, table, sockets, windows (prober_setup.cpp).
  TargetState* target_by_addr(const sockaddr_storage& ss, socklen_t len);
  void apply_targets(int64_t now);
  void grow_table(size_t wanted);
  void close_conn(TargetState& t);
  void count_socket_targets();
  void release_retired();
  Status open_sockets();
  void emit(TargetState& t, WindowAccumulator& w);
  void flush_windows(int64_t now);
  void mark_unsent(Slot& s, std::string_view why);

  // ---- The event loop, the send schedule, expiry (prober_loop.cpp).
  Status loop();
  void send_due(int64_t now);
  void expire(int64_t now);
  int64_t expire_next();
  void grace_sweep(int64_t now);
  int64_t grace_next();
  void poll_udp(bool streaming);

  // ---- UDP probes (udp_probes.cpp).
  void udp_flush_batch();
  void drain_errqueue(int sidx);
  void udp_malformed(int i);
  void udp_followups(int i, int64_t rx_mono);
  void udp_apply_followups(int i, const wire::Followups& f, int64_t rx_mono);
  void udp_datagram(int i, int64_t rx_mono);
  void udp_reply_or_followup(int i, const wire::Packet& p, int64_t rx_mono);
  void udp_readable(int sidx, uint32_t events);

  // ---- Paris traceroute (paris_trace.cpp).
  bool tracing() const { return cfg.trace_interval.count() > 0 && cfg.protocol == Protocol::udp; }
  void trace_step(int64_t now);
  int64_t trace_next() const;
  void trace_send_hop(int64_t now);
  void trace_hop(std::string addr, bool is_target);
  void trace_finish(int64_t now);
  size_t trace_pick_followed(int64_t now) const;  // a (target, flow) job index, or SIZE_MAX
  void trace_follow(uint32_t target, uint32_t gen, size_t flow, int64_t now);
  bool trace_icmp(int sidx, const msghdr& m);
  void trace_reply(const wire::Packet& p);

  // ---- TCP connect probes (tcp_connect_probes.cpp).
  void tcp_start(uint32_t tindex, TargetState& t);
  void tcp_connected(uint64_t seq);
  void recycle_probe_fd(int fd, int family_index);

  // ---- TCP probes on kept-open connections (tcp_stream_probes.cpp).
  void keep_open_connect(uint32_t tindex, TargetState& t, int64_t now);
  void keep_open_send(uint32_t tindex, TargetState& t, int64_t now);
  size_t keep_open_tx_stamps(uint32_t tindex);
  void keep_open_event(uint32_t tindex, uint32_t events);
  bool keep_open_frame(uint32_t tindex, TargetState& t, std::span<const uint8_t, wire::kSize> frame,
                       const net::KernelTime& kt);

  // ---- On every probe's path, inlined where used.
  TargetState* target_of(const Slot& s) {
    if (s.target >= targets.size()) return nullptr;
    TargetState* t = targets[s.target].get();
    return (t && t->gen == s.target_gen) ? t : nullptr;
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
      --tcp_open;
      recycle_probe_fd(s.fd, s.sock);
      s.fd = -1;
    }
  }

  int64_t deadline(const Slot& s) const { return s.timing.tx_user_mono + timeout_ns; }
  // The flow a probe went on (its UDP socket's flow index; 0 for TCP).
  size_t flow_of(const Slot& s) const { return nflows > 1 ? s.sock % nflows : 0; }

  // A late answer is counted in the window that counted its probe as lost (per window, late is part
  // of lost: proto/window_stats.hpp, and the controller refuses a window with late > lost), while
  // that window is open; once it has gone out the answer stays in the counters only. Counted in the
  // window current at its arrival instead, a starved prober sent windows with late > lost, and the
  // controller refused their whole batches (issue 14, 1,000 agents in one process).
  void add_late_to_loss_window(TargetState& t, const Slot& s) {
    const int64_t idx = window_index(deadline(s) + offset_rt, window_ns);
    auto& w = t.windows[static_cast<size_t>(idx) % n_windows];
    if (w.open() && w.index() == idx) w.add_late();
  }

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
    if (t) window_at(*t, deadline(s)).add_lost(flow_of(s));
    report(t, s, false, nullptr);
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
        window_at(*t, deadline(s)).add_lost(flow_of(s));
        add_late_to_loss_window(*t, s);
      }
      report(t, s, false, nullptr);
      return;
    }
    s.state = SlotState::done;
    Counters::inc(ctr.received);
    if (r.weird) Counters::inc(ctr.weird);
    if (t) {
      --t->in_flight;
      window_at(*t, deadline(s)).add_answer(r, flow_of(s));
    }
    report(t, s, true, &r);
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

  // A target's k-th probe goes on flow k % nflows: round-robin at the target's own rate. Targets
  // due together are mostly on the same round (their phases spread over one interval), so a batch
  // still goes to one socket, as with one flow.
  void udp_queue(uint32_t tindex, TargetState& t) {
    const int sock = static_cast<int>(t.sock * nflows + (nflows > 1 ? t.k % nflows : 0));
    if (sbatch_n > 0 && (sbatch_sock != sock || sbatch_n == kBatch)) udp_flush_batch();
    sbatch_sock = sock;
    sseq[sbatch_n++] = tindex;  // the target index until the batch is flushed
  }

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
};

}  // namespace weft::probe
