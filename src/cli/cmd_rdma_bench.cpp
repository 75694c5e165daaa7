// `weft rdma bench --server | --client HOST`: perftest's latency and bandwidth tests in one
// command, for SEND, WRITE, WRITE_IMM, READ, FETCH_ADD and COMPARE_SWAP over RC (SEND and WRITE
// also over UC, SEND also over UD), one size or the -a sweep, iteration or duration mode,
// busy/channel/epoll completion waits, and perftest's flags (-b, -q, -U, -r, -l, -o, -x, -i, -m,
// -S, -T, -R, --use-srq, --report_gbits, --perform_warm_up; rdma_bench_options.hpp parses them;
// rdma_bench_link.hpp makes the PD, CQ and QPs, or takes them from rdma_cm with -R).
// Figures are computed the way perftest computes them (see rdma_bench_stats.hpp), so each row can
// be compared with ib_*_lat / ib_*_bw on the same machine.
//
// Both sides are started with the same test flags; the client sends its parameters first and
// both refuse a mismatch with a message naming the fields. Then (per size) a barrier, the timed
// loop, a barrier. The client prints the report (text like perftest's, or JSON lines).
#include <arpa/inet.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <bit>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "base/clock.hpp"
#include "base/little_endian.hpp"
#include "base/log.hpp"
#include "cli/command_registry.hpp"
#include "cli/rdma_args.hpp"
#include "cli/rdma_bench_link.hpp"
#include "cli/rdma_bench_options.hpp"
#include "cli/rdma_bench_params.hpp"
#include "cli/rdma_bench_stats.hpp"
#include "cli/rdma_side_channel.hpp"
#include "net/socket.hpp"
#include "rdma/address_handle.hpp"
#include "rdma/completion_waiter.hpp"
#include "rdma/device.hpp"
#include "rdma/error.hpp"
#include "rdma/memory_region.hpp"
#include "rdma/queue_pair.hpp"
#include "rdma/shared_receive_queue.hpp"
#include "rdma/side_channel.hpp"

namespace {

using namespace weft;
using namespace weft::rdma;
using namespace weft::cli;
using std::chrono::milliseconds;

using Options = weft::cli::BenchOptions;

// Cheap timestamps for the timed loops, as perftest takes them (the TSC), turned into
// nanoseconds by the run's own calibration against the monotonic clock.
struct Ticks {
  static int64_t now() {
#if defined(__x86_64__)
    return static_cast<int64_t>(__rdtsc());
#else
    return mono_ns();
#endif
  }
  int64_t t0 = now(), m0 = mono_ns();
  // Converts a span of tick stamps in place, with the ratio measured from construction to now.
  void to_ns(std::vector<int64_t>& v) const {
    const int64_t t1 = now(), m1 = mono_ns();
    const double ns_per_tick = t1 > t0 ? static_cast<double>(m1 - m0) / static_cast<double>(t1 - t0) : 1.0;
    for (auto& x : v) x = static_cast<int64_t>(static_cast<double>(x - t0) * ns_per_tick);
  }
};

constexpr uint64_t kPeerTag = 1;  // the side channel's socket in the epoll set

// The transport as --json spells it (rc, uc, ud).
std::string_view lower_transport(const BenchParams& p) { return p.ud ? "ud" : p.uc ? "uc" : "rc"; }

struct Bench {
  const Options& o;
  const BenchPlan& plan;
  BenchParams p;
  bool active;  // the client drives; the server answers ping-pongs or receives
  milliseconds timeout;
  SideChannel& chan;
  Device dev;
  std::vector<QueuePair> qps;  // -q: several; latency tests use the first
  MemoryRegion mr;
  CompletionQueue& cq;
  CompletionWaiter& waiter;
  std::optional<AddressHandle> ah;
  EndpointInfo peer;                  // the peer's first QP (and its buffer, the same for all)
  std::vector<EndpointInfo> peers{};  // every QP of the peer, qps[i] connected to peers[i]
  std::unordered_map<uint32_t, uint32_t> qp_of_num{};  // QP number -> index into qps
  std::optional<SharedReceiveQueue> srq{};             // --use-srq: every QP's receives
  size_t buf = 0;         // [0, buf): what we send/read into; [buf, 2 buf): what the peer targets
  uint32_t recv_off = 0;  // UD: the GRH before the payload
  uint32_t inline_max = 0;
  uint32_t rx_depth = 0;
  std::vector<RecvWr> recvs{};
  std::array<ibv_wc, 64> wcs{};
  uint64_t received = 0;              // server: messages received in the last bandwidth run
  std::string unsorted{};             // -U: the last latency run's samples in the order taken
  std::vector<SecondRate> seconds{};  // --per-second: the last bandwidth run's

  std::byte* local() const { return mr.data(); }
  std::byte* target() const { return mr.data() + buf; }

  // Receives take the whole target half, so any size of the sweep fits whichever is posted.
  Status post_recvs(uint32_t n, uint64_t /*size*/, size_t qi = 0) {
    recvs.clear();
    for (uint32_t i = 0; i < n; ++i)
      recvs.push_back(RecvWr::into(mr.local(buf, static_cast<uint32_t>(buf)), 0x8000'0000'0000'0000ull | i));
    if (srq) return srq->post_recv(std::span<RecvWr>(recvs));
    return qps[qi].post_recv(std::span<RecvWr>(recvs));
  }
  size_t qp_index(const ibv_wc& wc) const {
    auto it = qp_of_num.find(wc.qp_num);
    return it == qp_of_num.end() ? 0 : it->second;
  }
  // Messages a bandwidth run sends from one side: -n per QP, as perftest counts them.
  uint64_t per_run() const { return p.iters * qps.size(); }

  SendWr make_wr(uint64_t size) {
    const auto len = static_cast<uint32_t>(size);
    RemoteBuf at = peer.buf;
    at.length = len;
    switch (p.op) {
      case BenchOp::send: {
        auto w = SendWr::send(mr.local(0, len), 0);
        if (ah) w.to(ah->raw(), peer.qp.qpn, peer.qkey);
        return w;
      }
      case BenchOp::write:
        return SendWr::write(mr.local(0, len), at, 0);
      case BenchOp::write_imm:
        return SendWr::write_imm(mr.local(0, len), at, 0, 0);
      case BenchOp::read:
        return SendWr::read(mr.local(0, len), at, 0);
      case BenchOp::fetch_add:
        return SendWr::fetch_add(mr.local(0, 8), at, 1, 0);
      case BenchOp::compare_swap:
        return SendWr::compare_swap(mr.local(0, 8), at, 0, 0, 0);
    }
    return SendWr::send(mr.local(0, len), 0);
  }

  // check_completion, but an error a dying peer causes (a killed server's QP and memory may go
  // before its socket) is reported as the peer being gone when its side channel closes within
  // half a second, not only as the raw status (IBV_WC_REM_OP_ERR, retries exceeded...).
  Status checked(const ibv_wc& wc) {
    auto s = check_completion(wc);
    if (s || !peer_death_can_cause(s.error().code) || !chan.peer_closed_within(milliseconds(500))) return s;
    return std::unexpected(
        Error{fmt::format("bench: the peer is gone (its side channel closed) ({})", s.error().message),
              ECONNRESET});
  }

  // Waits for completions; a peer that closes the side channel ends the wait with an error.
  Result<int> wait_cq() { return wait_cq(timeout); }
  // One ibv_poll_cq, the plain verb perftest polls with: the bench's CQ has no timestamps, so
  // CompletionQueue::poll does not go through the extended API (which reads every field of each
  // completion: slower on rxe).
  Result<int> poll_plain() { return cq.poll(wcs); }
  // Whether the peer's side channel shows it closed (its process died; bytes it sent before, a
  // barrier it reached first, do not count). Looked at between waits, so a dead peer ends a
  // wait at once instead of when the wait's limit expires (rxe retries a WRITE to a dead QP
  // for longer than --timeout-ms).
  Status peer_alive() {
    if (!chan.peer_closed_within(milliseconds(0))) return {};
    return std::unexpected(Error{"bench: the peer is gone (its side channel closed)", ECONNRESET});
  }

  Result<int> wait_cq(milliseconds limit) {
    // The limit starts at the first look at the clock: no clock read on the way to a completion.
    int64_t give_up = 0;
    auto expired = [&] {
      const int64_t now = mono_ns();
      if (give_up == 0) give_up = now + limit.count() * 1'000'000;
      return now > give_up;
    };
    auto took_too_long = [&] {
      return fail("bench: no completion within {} ms ({} {} {})", limit.count(), to_string(p.op),
                  transport_name(p.ud, p.uc), o.wait);
    };
    if (waiter.mode() == WaitMode::busy) {
      for (uint32_t spins = 0;; ++spins) {
        auto n = poll_plain();
        if (!n) return n;
        if (*n > 0) {
          for (int i = 0; i < *n; ++i)
            if (auto s = checked(wcs[static_cast<size_t>(i)]); !s) return std::unexpected(s.error());
          return n;
        }
        // The clock only every 1024 empty polls: it costs more than a poll on an emulated CPU.
        if ((spins & 1023) == 1023) {
          if (auto s = peer_alive(); !s) return std::unexpected(s.error());
          if (expired()) return took_too_long();
        }
      }
    }
    for (;;) {
      // Slices of at most 100 ms: the side channel is looked at between them.
      auto n = waiter.wait(wcs, std::min(limit, milliseconds(100)));
      if (!n) return n;
      if (*n > 0) {
        for (int i = 0; i < *n; ++i)
          if (auto s = checked(wcs[static_cast<size_t>(i)]); !s) return std::unexpected(s.error());
        return n;
      }
      if (auto s = peer_alive(); !s) return std::unexpected(s.error());
      // The peer is ahead of us at a barrier: stop watching until this size is done.
      if (waiter.fd_ready())
        if (auto s = waiter.poller()->unwatch_fd(chan.fd()); !s) return std::unexpected(s.error());
      if (expired()) return took_too_long();
    }
  }

  // --- latency ------------------------------------------------------------------------------
  // SEND, WRITE_IMM, WRITE: ping-pong. Each message carries its sequence number (1-255) in the
  // last byte and a "last message" flag in the first; the server echoes until it sees the flag.
  // WRITE is received by polling the last byte of the target buffer, like ib_write_lat.
  uint32_t sends_out = 0;   // signalled sends not completed yet
  uint32_t recvs_used = 0;  // receives consumed and not posted again

  // Takes what completions there are (blocking in the wait mode if `block`); true if a receive
  // was among them.
  Result<bool> reap(bool block) {
    int n = 0;
    if (block) {
      auto r = wait_cq();
      if (!r) return std::unexpected(r.error());
      n = *r;
    } else {
      auto r = poll_plain();
      if (!r) return std::unexpected(r.error());
      n = *r;
      for (int i = 0; i < n; ++i)
        if (auto s = checked(wcs[static_cast<size_t>(i)]); !s) return std::unexpected(s.error());
    }
    bool got = false;
    for (int i = 0; i < n; ++i) {
      if (wcs[static_cast<size_t>(i)].opcode & IBV_WC_RECV) {
        got = true;
        ++recvs_used;
      } else {
        --sends_out;
      }
    }
    return got;
  }

  Result<LatencyReport> pingpong(uint64_t size) {
    const bool by_memory = p.op == BenchOp::write;
    SendWr wr = make_wr(size);
    if (size <= inline_max) wr.inlined();
    auto* out = reinterpret_cast<volatile uint8_t*>(local());
    auto* in = reinterpret_cast<volatile uint8_t*>(target() + recv_off);
    // Only the post times are stamped in the loop (perftest's tposted).
    std::vector<int64_t> posted;
    posted.reserve(p.duration_ms ? 1 << 20 : p.iters);
    sends_out = 0;
    uint8_t seq = 0;
    const int64_t end = p.duration_ms ? mono_ns() + int64_t{p.duration_ms} * 1'000'000 : 0;
    Ticks ticks;
    // Until the peer's message `want` is here.
    auto await_peer = [&](uint8_t want) -> Status {
      if (by_memory) {
        // The clock is read once per 64 Ki spins: the limit starts at the first look.
        int64_t give_up = 0;
        for (uint32_t spins = 0; in[size - 1] != want; ++spins) {
          if (sends_out > 0)
            if (auto r = reap(false); !r) return std::unexpected(r.error());
          if ((spins & 0xffff) == 0xffff) {
            const int64_t now = mono_ns();
            if (give_up == 0)
              give_up = now + timeout.count() * 1'000'000;
            else if (now > give_up)
              return fail("bench: no WRITE from the peer within {} ms", timeout.count());
          }
        }
        return {};
      }
      for (;;) {
        auto got = reap(true);
        if (!got) return std::unexpected(got.error());
        if (!*got) continue;
        if (recvs_used >= rx_depth / 2) {
          if (auto s = post_recvs(recvs_used, size); !s) return s;
          recvs_used = 0;
        }
        if (in[size - 1] != want) return fail("bench: message {} came back as {}", want, in[size - 1]);
        return {};
      }
    };
    auto send = [&](bool last) -> Status {
      // Keep the send queue from overflowing: reap completions first when it is full.
      while (sends_out >= p.tx_depth)
        if (auto r = reap(!by_memory); !r) return std::unexpected(r.error());
      out[0] = last ? 1 : 0;
      out[size - 1] = seq;
      if (p.op == BenchOp::write_imm) wr.wr.imm_data = htonl(seq);
      ++sends_out;
      return qps[0].post_send(wr);
    };
    bool last = false;
    for (uint64_t i = 0; !last; ++i) {
      seq = static_cast<uint8_t>(seq % 255 + 1);
      if (active) {
        last = p.duration_ms ? (i % 16 == 15 && mono_ns() >= end) : i + 1 == p.iters;
        posted.push_back(Ticks::now());
        if (auto s = send(last); !s) return std::unexpected(s.error());
        if (auto s = await_peer(seq); !s) return std::unexpected(s.error());
      } else {
        if (auto s = await_peer(seq); !s) return std::unexpected(s.error());
        last = in[0] != 0;
        if (auto s = send(last); !s) return std::unexpected(s.error());
      }
    }
    // The last send's completion, so nothing is in flight when the next size starts.
    while (sends_out > 0)
      if (auto r = reap(true); !r) return std::unexpected(r.error());
    // Receives used this run are given back for the next size.
    if (recvs_used) {
      if (auto s = post_recvs(recvs_used, size); !s) return std::unexpected(s.error());
      recvs_used = 0;
    }
    ticks.to_ns(posted);
    if (plan.unsorted) unsorted = unsorted_lines(posted, 2);
    return latency_report(posted, size, 2);
  }

  // READ and atomics: post one, wait for its completion, repeat (a full round trip each).
  Result<LatencyReport> round_trips(uint64_t size) {
    SendWr wr = make_wr(size);
    std::vector<int64_t> posted;
    posted.reserve(p.duration_ms ? 1 << 20 : p.iters);
    const int64_t end = p.duration_ms ? mono_ns() + int64_t{p.duration_ms} * 1'000'000 : 0;
    Ticks ticks;
    for (uint64_t i = 0;; ++i) {
      if (p.duration_ms ? (i % 16 == 15 && mono_ns() >= end) : i == p.iters) break;
      posted.push_back(Ticks::now());
      if (auto s = qps[0].post_send(wr); !s) return std::unexpected(s.error());
      auto n = wait_cq();
      if (!n) return std::unexpected(n.error());
    }
    ticks.to_ns(posted);
    if (plan.unsorted) unsorted = unsorted_lines(posted, 1);
    return latency_report(posted, is_atomic(p.op) ? 8 : size, 1);
  }

  // --- bandwidth ------------------------------------------------------------------------------
  // The client keeps tx_depth WRs outstanding, signals every cq_mod-th (and the last), stamps
  // each post and each signalled completion (perftest's tposted/tcompleted).
  // -q N, as perftest: each QP has its own count of posted and completed messages (-n each), keeps
  // at most tx_depth in flight and signals every cq_mod-th of its own; the QPs are served in
  // turn. The stamps are kept in time order, as perftest's tposted/tcompleted: posted[k] is the
  // k-th post, completed[k - 1] the time the k-th message (of any QP) was known complete.
  Result<BandwidthReport> stream(uint64_t size) {
    SendWr wr = make_wr(size);
    if (p.op != BenchOp::read && !is_atomic(p.op) && size <= inline_max) wr.inlined();
    const size_t nq = qps.size();
    // Per QP, its WR template (UD: its own destination); -l: post_list WRs in one ibv_post_send.
    std::vector<std::vector<SendWr>> lists(nq, std::vector<SendWr>(p.post_list, wr));
    if (ah)
      for (size_t q = 0; q < nq; ++q)
        for (auto& w : lists[q]) w.to(ah->raw(), peers[q].qp.qpn, peers[q].qkey);
    const bool timed = p.duration_ms > 0;
    struct Count {
      uint64_t scnt = 0, ccnt = 0, limit = 0;
    };
    std::vector<Count> qc(nq, Count{0, 0, timed ? UINT64_MAX : p.iters});
    std::vector<int64_t> posted, completed;
    const size_t guess = timed ? 1 << 20 : per_run();
    posted.reserve(guess);
    completed.reserve(guess);
    const int64_t end = timed ? mono_ns() + int64_t{p.duration_ms} * 1'000'000 : 0;
    uint64_t done = 0;  // messages known complete, all QPs
    size_t finished = 0;
    received = 0;
    Ticks ticks;
    while (finished < nq) {
      for (size_t q = 0; q < nq; ++q) {
        Count& c = qc[q];
        while (c.scnt < c.limit && c.scnt - c.ccnt + p.post_list <= p.tx_depth) {
          if (timed && c.scnt % p.cq_mod == 0 && mono_ns() >= end) {
            // Stop at a signalled boundary: this QP's last posted WR was signalled.
            c.limit = c.scnt;
            if (c.ccnt >= c.limit) ++finished;
            break;
          }
          auto& list = lists[q];
          for (uint32_t k = 0; k < p.post_list; ++k) {
            const uint64_t id = c.scnt + k;
            auto& w = list[k];
            w.wr.wr_id = id;
            w.signaled((id + 1) % p.cq_mod == 0 || id + 1 == c.limit);
            if (p.op == BenchOp::write_imm) w.wr.imm_data = htonl(static_cast<uint32_t>(id));
          }
          const int64_t t = Ticks::now();
          for (uint32_t k = 0; k < p.post_list; ++k) {
            posted.push_back(t);
            completed.push_back(0);
          }
          if (auto s = qps[q].post_send(std::span<SendWr>(list)); !s) return std::unexpected(s.error());
          c.scnt += p.post_list;
        }
      }
      if (finished >= nq) break;
      // A signalled WR completes after up to cq_mod messages: allow 1 s per MiB of them on top
      // (8 MiB messages on an emulated rxe take seconds each).
      auto n = wait_cq(timeout + milliseconds((uint64_t{p.cq_mod} * size >> 20) * 1000));
      if (!n) return std::unexpected(n.error());
      const int64_t t = Ticks::now();
      for (int i = 0; i < *n; ++i) {
        const ibv_wc& wc = wcs[static_cast<size_t>(i)];
        if (wc.opcode & IBV_WC_RECV) {
          // -b with SEND/WRITE_IMM: the peer's stream lands in the same CQ.
          if (auto s = took_recv(wc); !s) return std::unexpected(s.error());
          continue;
        }
        // A signalled WR completes every earlier WR of its QP.
        Count& c = qc[nq == 1 ? 0 : qp_index(wc)];
        done += wc.wr_id + 1 - c.ccnt;
        c.ccnt = wc.wr_id + 1;
        completed[done - 1] = t;
        if (c.ccnt >= c.limit) ++finished;
      }
    }
    sent = 0;
    for (const auto& c : qc) sent += c.limit;
    ticks.to_ns(posted);
    ticks.to_ns(completed);
    if (plan.per_second) seconds = per_second_rates(posted, completed, is_atomic(p.op) ? 8 : size, p.cq_mod);
    return bandwidth_report(posted, completed, is_atomic(p.op) ? 8 : size, p.cq_mod);
  }

  // --perform_warm_up: tx_depth WRs, the last one signalled, untimed, before the timed run (perftest's
  // perform_warm_up: caches and the device's translation tables are warm when the clock starts).
  Status warm_up(uint64_t size) {
    SendWr wr = make_wr(size);
    if (p.op != BenchOp::read && !is_atomic(p.op) && size <= inline_max) wr.inlined();
    for (auto& q : qps) {
      for (uint32_t i = 0; i < p.tx_depth; ++i) {
        wr.wr.wr_id = i;
        wr.signaled(i + 1 == p.tx_depth);
        if (auto s = q.post_send(wr); !s) return s;
      }
      for (bool done = false; !done;) {
        auto n = wait_cq();
        if (!n) return std::unexpected(n.error());
        for (int i = 0; i < *n; ++i)
          if (wcs[static_cast<size_t>(i)].wr_id + 1 == p.tx_depth) done = true;
      }
    }
    return {};
  }

  uint64_t sent = 0;  // messages the last stream() sent

  // One receive taken during a stream: counted and posted again at once, as perftest's
  // run_iter_bw_server does (one ibv_post_recv per completion), so each QP keeps rx_depth
  // receives posted and the poll loop never stops for a burst of posts. (Giving receives back in
  // batches of rx_depth / 4 per QP cost -q 2 and -b SEND bandwidth: docs/BENCHMARKS.md.)
  Status took_recv(const ibv_wc& wc) {
    ++received;
    RecvWr r = RecvWr::into(mr.local(buf, static_cast<uint32_t>(buf)), wc.wr_id);
    if (srq) return srq->post_recv(r);  // one pool with --use-srq
    return qps[qp_index(wc)].post_recv(r);
  }

  // -b with SEND/WRITE_IMM, after this side's stream: tells the peer how many messages it sent (8
  // bytes on the side channel) and takes the peer's until its count is in (RC), or until 200 ms
  // pass without one once the count is known (UD and UC may lose some).
  Status drain_peer() {
    std::array<uint8_t, 8> count{};
    le::store<uint64_t>(count.data(), sent);
    if (auto s = chan.send_all(std::as_bytes(std::span(count)), timeout); !s) return s;
    std::optional<uint64_t> peer_sent;
    int64_t last_seen = mono_ns();
    for (;;) {
      if (peer_sent && *peer_sent <= received) break;
      if (!peer_sent && ::recv(chan.fd(), count.data(), 8, MSG_PEEK | MSG_DONTWAIT) == 8) {
        if (auto s = chan.recv_all(std::as_writable_bytes(std::span(count)), timeout); !s) return s;
        peer_sent = le::load<uint64_t>(count.data());
        // The peer's barrier byte may follow: stop watching the channel for this size.
        if (waiter.poller()) (void)waiter.poller()->unwatch_fd(chan.fd());
        continue;
      }
      auto n = waiter.wait(wcs, milliseconds(10));
      if (!n) return std::unexpected(n.error());
      for (int i = 0; i < *n; ++i) {
        if (auto s = checked(wcs[static_cast<size_t>(i)]); !s) return s;
        if (wcs[static_cast<size_t>(i)].opcode & IBV_WC_RECV)
          if (auto s = took_recv(wcs[static_cast<size_t>(i)]); !s) return s;
      }
      const int64_t now = mono_ns();
      if (*n > 0) {
        last_seen = now;
        continue;
      }
      if (auto s = peer_alive(); !s) return s;
      if (peer_sent && (p.ud || p.uc) && now - last_seen > 200'000'000) break;
      if (now - last_seen > (timeout.count() + int64_t{p.duration_ms}) * 1'000'000)
        return fail("bench: {} of the peer's messages came within {} ms", received, timeout.count());
    }
    return {};
  }

  // Server side of SEND / WRITE_IMM bandwidth: take receives until all came (RC) or the client
  // says it is done (its barrier byte on the side channel; UD may lose some).
  Status sink() {
    received = 0;
    int idle = 0;
    for (;;) {
      if (!p.duration_ms && received >= per_run()) break;
      auto n = waiter.wait(wcs, milliseconds(10));
      if (!n) return std::unexpected(n.error());
      for (int i = 0; i < *n; ++i) {
        if (auto s = checked(wcs[static_cast<size_t>(i)]); !s) return s;
        if (auto s = took_recv(wcs[static_cast<size_t>(i)]); !s) return s;
      }
      if (*n > 0) {
        idle = 0;
        continue;
      }
      pollfd pf{chan.fd(), POLLIN, 0};
      if (::poll(&pf, 1, 0) > 0) {
        char b;
        if (::recv(chan.fd(), &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
          return fail("bench: the peer closed the side channel");
        // The client is done: one last look at the CQ, then give the receives back.
        auto m = waiter.wait(wcs, milliseconds(1));
        if (m && *m > 0) {
          for (int i = 0; i < *m; ++i)
            if (auto s = took_recv(wcs[static_cast<size_t>(i)]); !s) return s;
          continue;
        }
        break;
      }
      if (++idle * 10 > timeout.count() + p.duration_ms)
        return fail("bench: no message within {} ms", timeout.count());
    }
    return {};
  }
};

std::string latency_json(const BenchParams& p, const Options& o, const std::string& dev,
                         const LatencyReport& r) {
  return fmt::format(
      "{{\"test\":\"lat\",\"op\":\"{}\",\"qp\":\"{}\",\"rdma_cm\":{},\"wait\":\"{}\",\"device\":\"{}\","
      "\"size\":{},"
      "\"iters\":{},\"unit\":\"usec\",\"rtt_divisor\":{},\"t_min\":{:.3f},\"t_max\":{:.3f},"
      "\"t_typical\":{:.3f},\"t_avg\":{:.3f},\"t_stdev\":{:.3f},\"p50\":{:.3f},\"p90\":{:.3f},\"p99\":{:.3f},"
      "\"p99_9\":{:.3f}}}\n",
      to_string(p.op), lower_transport(p), p.rdma_cm, o.wait, dev, r.size, r.iters,
      is_one_sided_round(p.op) ? 1 : 2, r.min_us, r.max_us, r.typical_us, r.avg_us, r.stdev_us, r.typical_us,
      r.p90_us, r.p99_us, r.p999_us);
}

std::string bandwidth_json(const BenchParams& p, const BenchPlan& plan, const Options& o,
                           const std::string& dev, const BandwidthReport& r,
                           const std::vector<SecondRate>& seconds) {
  std::string per_second;
  if (plan.per_second) {
    per_second = ",\"per_second\":[";
    for (size_t i = 0; i < seconds.size(); ++i)
      per_second +=
          fmt::format("{}{{\"second\":{},\"messages\":{},\"bw_mbps\":{:.3f},\"msg_rate_mpps\":{:.6f}}}",
                      i ? "," : "", seconds[i].second, seconds[i].messages, seconds[i].mbps, seconds[i].mpps);
    per_second += "]";
  }
  return fmt::format(
      "{{\"test\":\"bw\",\"op\":\"{}\",\"qp\":\"{}\",\"rdma_cm\":{},\"wait\":\"{}\",\"device\":\"{}\","
      "\"size\":{},"
      "\"iters\":{},\"tx_depth\":{},\"cq_mod\":{},\"post_list\":{},\"qps\":{},\"bidirectional\":{},\"bw_peak_"
      "mbps\":{:."
      "3f},"
      "\"bw_avg_mbps\":{:.3f},\"bw_peak_gbits\":{:.4f},\"bw_avg_gbits\":{:.4f},\"msg_rate_mpps\":{:.6f}{}}}"
      "\n",
      to_string(p.op), lower_transport(p), p.rdma_cm, o.wait, dev, r.size, r.iters, p.tx_depth, p.cq_mod,
      p.post_list, p.num_qps, p.bidirectional, r.peak_mbps, r.avg_mbps, mib_to_gbits(r.peak_mbps),
      mib_to_gbits(r.avg_mbps), r.msg_rate_mpps, per_second);
}

// Both sides send their parameters before any QP exists; a different test is said on both
// sides (exit 2), naming each field that differs.
Status agree_on_test(SideChannel& chan, const BenchParams& mine, const Options& o, bool& usage) {
  const milliseconds timeout(o.timeout_ms);
  auto enc = encode(mine);
  if (auto s = chan.send_all(std::as_bytes(std::span(enc)), timeout); !s) return s;
  std::array<uint8_t, kBenchParamsBytes> theirs{};
  if (auto s = chan.recv_all(std::as_writable_bytes(std::span(theirs)), timeout); !s) return s;
  auto peer = decode_bench_params(theirs);
  if (!peer) return std::unexpected(peer.error());
  if (auto d = bench_mismatch(mine, *peer); !d.empty()) {
    usage = true;
    return fail("the {} runs another test: {}", o.server ? "client" : "server", d);
  }
  return {};
}

// perftest's default inline sizes for latency (SEND 236, UD 188, WRITE 220); none for bandwidth.
// (perftest itself inlines only on devices it knows, so on rxe it inlines nothing: give -I 0 to
// compare like with like there; the header says what was inlined.)
uint32_t inline_wanted(const BenchParams& p, const Options& o) {
  if (o.inline_size >= 0) return static_cast<uint32_t>(o.inline_size);
  if (p.test == BenchTest::lat && !is_one_sided_round(p.op))
    return p.op == BenchOp::send ? (p.ud ? 188 : 236) : 220;
  return 0;
}

// -b: the server's own figures go to the client after each size (three doubles, little-endian
// bit patterns), which reports the sum as perftest does.
Status send_report(SideChannel& chan, const BandwidthReport& r, milliseconds timeout) {
  std::array<uint8_t, 24> out{};
  const double v[3] = {r.peak_mbps, r.avg_mbps, r.msg_rate_mpps};
  for (int i = 0; i < 3; ++i) le::store<uint64_t>(out.data() + 8 * i, std::bit_cast<uint64_t>(v[i]));
  return chan.send_all(std::as_bytes(std::span(out)), timeout);
}

Result<BandwidthReport> recv_report(SideChannel& chan, milliseconds timeout) {
  std::array<uint8_t, 24> in{};
  if (auto s = chan.recv_all(std::as_writable_bytes(std::span(in)), timeout); !s)
    return std::unexpected(s.error());
  BandwidthReport r;
  r.peak_mbps = std::bit_cast<double>(le::load<uint64_t>(in.data()));
  r.avg_mbps = std::bit_cast<double>(le::load<uint64_t>(in.data() + 8));
  r.msg_rate_mpps = std::bit_cast<double>(le::load<uint64_t>(in.data() + 16));
  return r;
}

// The bandwidth run of one size on this side: warm-up, the timed stream, and with -b the sum with
// the peer's figures (after the closing barrier, so both streams have ended).
Result<std::optional<BandwidthReport>> bandwidth_size(Bench& b, uint64_t size, milliseconds run_limit) {
  const bool sends = !b.o.server || b.p.bidirectional;
  std::optional<BandwidthReport> mine;
  if (sends) {
    if (b.p.warm_up)
      if (auto s = b.warm_up(size); !s) return std::unexpected(s.error());
    auto r = b.stream(size);
    if (!r) return std::unexpected(r.error());
    mine = *r;
    if (b.p.bidirectional && needs_recv(b.p.op))
      if (auto s = b.drain_peer(); !s) return std::unexpected(s.error());
  } else if (needs_recv(b.p.op)) {
    // One-sided operations leave the server idle; SEND/WRITE_IMM streams end in its CQ.
    if (auto s = b.sink(); !s) return std::unexpected(s.error());
  }
  if (auto s = b.chan.barrier(run_limit); !s) return std::unexpected(s.error());
  if (!b.p.bidirectional) return mine;
  if (b.o.server) {
    if (auto s = send_report(b.chan, *mine, b.timeout); !s) return std::unexpected(s.error());
    return std::optional<BandwidthReport>{};
  }
  auto peer = recv_report(b.chan, b.timeout);
  if (!peer) return std::unexpected(peer.error());
  return sum_reports(*mine, *peer);
}

// One line per size (the client prints; the server only takes part), both sides meeting at a
// barrier before and after each size.
Status each_size(Bench& b, const std::vector<uint64_t>& sizes, std::FILE* cdf) {
  const Options& o = b.o;
  const BenchParams& mine = b.p;
  const bool lat = mine.test == BenchTest::lat;
  const std::string dev_name = b.dev.name();
  // Long enough for the peer's whole run of one size.
  const milliseconds run_limit(o.timeout_ms + int64_t{mine.duration_ms} + 600'000);
  for (uint64_t size : sizes) {
    if (is_atomic(mine.op) && size != 8) continue;
    if (lat && !is_one_sided_round(mine.op) && size < 2) continue;
    if (auto s = b.chan.barrier(run_limit); !s) return s;
    if (auto* pl = b.waiter.poller()) {
      (void)pl->unwatch_fd(b.chan.fd());
      if (auto s = pl->watch_fd(b.chan.fd(), kPeerTag); !s) return s;
    }
    std::string line;
    if (!lat) {
      auto r = bandwidth_size(b, size, run_limit);
      if (!r) return std::unexpected(r.error());
      if (*r && !o.server) {
        line = o.json ? bandwidth_json(mine, b.plan, o, dev_name, **r, b.seconds)
                      : bandwidth_line(**r, b.plan.report_gbits);
        if (!o.json)
          for (const auto& sr : b.seconds)
            line +=
                fmt::format("# second {}: {} messages, BW {:.2f} {}, MsgRate {:.6f} Mpps\n", sr.second + 1,
                            sr.messages, b.plan.report_gbits ? mib_to_gbits(sr.mbps) : sr.mbps,
                            b.plan.report_gbits ? "Gb/sec" : "MB/sec", sr.mpps);
      }
    } else {
      std::optional<LatencyReport> r;
      if (!is_one_sided_round(mine.op)) {
        auto got = b.pingpong(size);
        if (!got) return std::unexpected(got.error());
        r = *got;
      } else if (!o.server) {
        auto got = b.round_trips(size);
        if (!got) return std::unexpected(got.error());
        r = *got;
      }
      if (r && !o.server) {
        line = o.json ? latency_json(mine, o, dev_name, *r) : latency_line(*r);
        if (b.plan.unsorted && !o.json) line = b.unsorted + latency_header() + line;
        if (cdf)
          for (double v : r->sorted_us) fmt::print(cdf, "{} {:.3f}\n", r->size, v);
      }
      if (auto s = b.chan.barrier(run_limit); !s) return s;
    }
    if (!line.empty()) {
      fmt::print("{}", line);
      std::fflush(stdout);
    }
    if (o.server && !lat && needs_recv(mine.op))
      log().info("rdma bench server: size {}: {} messages received", size, b.received);
  }
  return {};
}

// The client's header and --cdf file around the runs of every size.
Status run_sizes(Bench& b, const std::vector<uint64_t>& sizes, uint32_t mtu,
                 const std::vector<std::string>& notes) {
  const Options& o = b.o;
  const BenchParams& mine = b.p;
  const bool lat = mine.test == BenchTest::lat;
  const std::string dev_name = b.dev.name();
  std::FILE* cdf = nullptr;
  if (!o.cdf.empty() && !o.server) {
    cdf = std::fopen(o.cdf.c_str(), "w");
    if (!cdf) return fail_errno(fmt::format("open {}", o.cdf), errno);
  }
  // perftest's silent adjustments, said (on stderr with --json, so stdout stays JSON lines).
  for (const auto& n : notes) fmt::print(o.json ? stderr : stdout, "# adjusted like perftest: {}\n", n);
  if (!o.server && !o.json) {
    fmt::print(
        "# weft rdma bench: {} {} {}{} on {} port {} (MTU {}), wait {}, tx_depth {}, cq_mod {}, inline "
        "{}{}{}{}{}{}\n",
        to_string(mine.op), lat ? "latency" : "bandwidth", transport_name(mine.ud, mine.uc),
        mine.rdma_cm ? " (rdma_cm)" : "", dev_name, b.plan.ib_port, mtu, o.wait, mine.tx_depth, mine.cq_mod,
        b.inline_max,
        needs_recv(mine.op) ? fmt::format(", rx_depth {}{}", b.rx_depth, b.srq ? " (SRQ)" : "")
                            : std::string(),
        mine.post_list > 1 ? fmt::format(", post_list {}", mine.post_list) : std::string(),
        mine.num_qps > 1 ? fmt::format(", {} QPs", mine.num_qps) : std::string(),
        mine.bidirectional ? ", bidirectional (sum of both sides)" : "",
        mine.duration_ms ? fmt::format(", {} s per size", o.duration_s)
                         : fmt::format(", {} iterations", mine.iters));
    if (!b.plan.unsorted) fmt::print("{}", lat ? latency_header() : bandwidth_header(b.plan.report_gbits));
  }
  auto ran = each_size(b, sizes, cdf);
  if (cdf) std::fclose(cdf);
  return ran;
}

// The arguments on their own, before any device or peer.
Result<BenchPlan> check_usage(const Options& o) {
  auto plan = plan_bench(o);
  if (!plan) return plan;
  if (plan->params.test == BenchTest::lat && plan->params.op == BenchOp::write && o.wait != "busy")
    return fail("WRITE latency polls memory for the peer's WRITE (like ib_write_lat): use --wait busy");
  return plan;
}

ibv_mtu mtu_enum(uint32_t bytes) {
  switch (bytes) {
    case 256:
      return IBV_MTU_256;
    case 512:
      return IBV_MTU_512;
    case 2048:
      return IBV_MTU_2048;
    case 4096:
      return IBV_MTU_4096;
    default:
      return IBV_MTU_1024;
  }
}

// `usage` is set when the error is the user's arguments (exit 2).
Status run(const Options& o, bool& usage) {
  auto planned = check_usage(o);
  if (!planned) {
    usage = true;
    return std::unexpected(planned.error());
  }
  BenchPlan plan = std::move(*planned);
  const BenchParams mine = plan.params;
  const milliseconds timeout(o.timeout_ms);
  const auto mode = *parse_wait_mode(o.wait);

  // The device first: a UD size above its MTU is a usage error, said before waiting for a peer.
  auto dev = Device::open(o.device);
  if (!dev) return std::unexpected(dev.error());
  auto port = dev->port(plan.ib_port);
  if (!port) return std::unexpected(port.error());
  // -m: as perftest, never above the port's active MTU.
  ibv_mtu path_mtu = port->active_mtu;
  if (plan.mtu) {
    path_mtu = mtu_enum(plan.mtu);
    if (path_mtu > port->active_mtu) {
      plan.notes.push_back(fmt::format("mtu {} -> {} (the port's active MTU)", plan.mtu,
                                       128u << static_cast<int>(port->active_mtu)));
      path_mtu = port->active_mtu;
    }
  }
  const uint32_t mtu = 128u << static_cast<int>(path_mtu);
  // -a sweeps 2 B .. 8 MiB (UD: .. the MTU), like perftest.
  const auto sizes = size_sweep(mine.all_sizes, mine.size, mine.ud ? mtu : kRdmaMaxMessage);
  if (mine.ud && !mine.all_sizes)
    if (auto s = check_ud_size(mine.size, mtu, dev->name()); !s) {
      usage = true;
      return s;
    }
  // Side channel, then the parameters: a mismatch is said before any QP is made.
  auto opened = weft::cli::open_side_channel({o.server, o.bind, o.client, o.port, timeout}, "bench");
  if (!opened) return std::unexpected(opened.error());
  std::optional<SideChannel> chan(std::move(*opened));
  if (auto s = agree_on_test(*chan, mine, o, usage); !s) return s;
  auto addr = weft::cli::side_channel_ipv4(*chan, "bench");
  if (!addr) return std::unexpected(addr.error());

  auto caps = dev->caps();
  if (!caps) return std::unexpected(caps.error());
  if (is_atomic(mine.op) && !caps->atomics) return fail("{} has no atomics (atomic_cap NONE)", dev->name());
  ConnectOptions co;
  co.port = plan.ib_port;
  ibv_gid my_gid{};
  if (plan.gid_index >= 0) {
    // -x: the user's GID index, as perftest takes it.
    if (::ibv_query_gid(dev->raw(), plan.ib_port, plan.gid_index, &my_gid))
      return fail_errno(
          fmt::format("-x {}: no such GID index on {} port {}", plan.gid_index, dev->name(), plan.ib_port),
          errno);
    co.gid_index = plan.gid_index;
  } else if (!plan.rdma_cm) {  // (-R: rdma_cm picks the GID of the address)
    auto gid = dev->roce_v2_gid(*addr);
    if (!gid) return std::unexpected(gid.error());
    co.gid_index = static_cast<int>(gid->index);
    my_gid = gid->gid;
  }
  co.mtu = path_mtu;
  co.sl = plan.sl;
  co.traffic_class = plan.traffic_class;
  // As many READs/atomics in flight as the device allows (perftest's default), up to tx_depth;
  // -o asks for a number, lowered to the device's maximum as perftest does.
  const int device_reads = std::min(caps->max_qp_rd_atom, caps->max_qp_init_rd_atom);
  int reads = std::min(device_reads, int(mine.tx_depth));
  if (plan.out_reads) {
    reads = plan.out_reads;
    if (reads > device_reads) {
      plan.notes.push_back(
          fmt::format("outstanding reads {} -> {} (the device's maximum)", reads, device_reads));
      reads = device_reads;
    }
  }
  co.max_rd_atomic = static_cast<uint8_t>(std::clamp(reads, 1, 255));

  const uint32_t rx_depth = plan.rx_depth;
  const uint32_t nq = mine.num_qps;
  const uint32_t want_inline = inline_wanted(mine, o);
  const uint64_t max_size = sizes.back();
  const size_t buf = (max_size + kGrhBytes + 4095) / 4096 * 4096;
  BenchLinkSpec spec{.server = o.server,
                     .bind = o.bind,
                     .client = o.client,
                     .port = o.port,
                     .device = o.device,
                     .timeout = timeout,
                     .mode = mode,
                     .qp = QpOptions{.type = mine.ud   ? QpType::ud
                                             : mine.uc ? QpType::uc
                                                       : QpType::rc,
                                     .max_send_wr = mine.tx_depth,
                                     .max_recv_wr = rx_depth,
                                     .max_inline = want_inline,
                                     .signal_all = false},
                     .co = co,
                     .my_gid = my_gid,
                     .num_qps = nq,
                     .cq_depth = static_cast<int>((mine.tx_depth + rx_depth) * nq + 16),
                     // --use-srq: one SRQ of rx_depth receives feeds every QP (perftest's SRQ mode).
                     .use_srq = plan.use_srq,
                     .srq_depth = rx_depth,
                     .mr_bytes = 2 * buf,
                     .target_off = buf,
                     .rdma_cm = plan.rdma_cm,
                     .tos = o.tos ? std::optional<uint8_t>(plan.traffic_class) : std::nullopt};
  auto link = link_bench(*chan, std::move(*dev), spec);
  if (!link) return std::unexpected(link.error());
  auto waiter = CompletionWaiter::create(link->cq(), mode);
  if (!waiter) return std::unexpected(waiter.error());
  if (auto* pl = waiter->poller())
    if (auto s = pl->watch_fd(chan->fd(), kPeerTag); !s) return s;

  Bench b{.o = o,
          .plan = plan,
          .p = mine,
          .active = !o.server,
          .timeout = timeout,
          .chan = *chan,
          .dev = link->dev,
          .qps = link->qps,
          .mr = std::move(*link->mr),
          .cq = link->cq(),
          .waiter = *waiter,
          .ah = std::move(link->ah),
          .peer = link->peers[0]};
  b.peers = link->peers;
  for (uint32_t i = 0; i < b.qps.size(); ++i) b.qp_of_num[b.qps[i].qpn()] = i;
  b.srq = std::move(link->srq);
  b.buf = buf;
  b.recv_off = mine.ud ? kGrhBytes : 0;
  b.inline_max = std::min(want_inline, b.qps[0].max_inline());
  b.rx_depth = rx_depth;
  if (needs_recv(mine.op))
    for (uint32_t i = 0; i < (b.srq ? 1 : nq); ++i)
      if (auto s = b.post_recvs(rx_depth, 0, i); !s) return s;

  return run_sizes(b, sizes, mtu, plan.notes);
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto opts = std::make_shared<Options>();
  auto* sub = root.rdma->add_subcommand(
      "bench",
      "perftest-style latency/bandwidth of SEND, WRITE, WRITE_IMM, READ, FAA, CAS (RC, UC; SEND also UD)");
  weft::cli::add_bench_options(sub, *opts);
  sub->callback([opts] {
    const Options& o = *opts;
    if (!o.server && o.client.empty()) {
      fmt::print(stderr, "weft rdma bench: give --server or --client HOST\n");
      weft::cli::set_exit_code(weft::cli::kUsageError);
      return;
    }
    bool usage = false;
    if (auto s = run(o, usage); !s) {
      fmt::print(stderr, "weft rdma bench: {}\n", s.error().message);
      weft::cli::set_exit_code(usage ? weft::cli::kUsageError : 1);
    }
  });
}};

}  // namespace
