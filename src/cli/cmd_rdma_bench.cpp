// `weft rdma bench --server | --client HOST`: perftest's latency and bandwidth tests in one
// command, for SEND, WRITE, WRITE_IMM, READ, FETCH_ADD and COMPARE_SWAP over RC (SEND also over
// UD), one size or the -a sweep, iteration or duration mode, busy/channel/epoll completion waits.
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
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "base/clock.hpp"
#include "base/log.hpp"
#include "cli/command_registry.hpp"
#include "cli/rdma_args.hpp"
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
#include "rdma/side_channel.hpp"

namespace {

using namespace weft;
using namespace weft::rdma;
using namespace weft::cli;
using std::chrono::milliseconds;

struct Options {
  bool server = false;
  std::string client;
  std::string bind = "0.0.0.0";
  uint16_t port = 47060;
  std::string device;
  std::string op = "send";
  std::string test = "lat";
  std::string qp = "rc";
  std::string wait = "busy";
  bool all = false;
  uint32_t size = 0;      // 0: perftest's default (2 B latency, 64 KiB bandwidth, 8 B atomics)
  uint64_t iters = 0;     // 0: 1000 latency, 5000 bandwidth
  double duration_s = 0;  // > 0: duration mode
  uint32_t tx_depth = 0;  // 0: 1 latency, 128 bandwidth
  uint32_t cq_mod = 0;    // 0: 1 latency, min(100, tx_depth) bandwidth
  int inline_size = -1;   // -1: perftest's default (latency SEND 236/188 UD, WRITE 220; else 0)
  bool json = false;
  std::string cdf;  // write the kept latency samples here (size, usec per line)
  int timeout_ms = 5000;
};

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

struct Bench {
  const Options& o;
  BenchParams p;
  bool active;  // the client drives; the server answers ping-pongs or receives
  milliseconds timeout;
  SideChannel& chan;
  Device dev;
  QueuePair qp;
  MemoryRegion mr;
  CompletionQueue& cq;
  CompletionWaiter& waiter;
  std::optional<AddressHandle> ah;
  EndpointInfo peer;
  size_t buf = 0;         // [0, buf): what we send/read into; [buf, 2 buf): what the peer targets
  uint32_t recv_off = 0;  // UD: the GRH before the payload
  uint32_t inline_max = 0;
  uint32_t rx_depth = 0;
  std::vector<RecvWr> recvs{};
  std::array<ibv_wc, 64> wcs{};
  uint64_t received = 0;  // server: messages received in the last bandwidth run

  std::byte* local() const { return mr.data(); }
  std::byte* target() const { return mr.data() + buf; }

  // Receives take the whole target half, so any size of the sweep fits whichever is posted.
  Status post_recvs(uint32_t n, uint64_t /*size*/) {
    recvs.clear();
    for (uint32_t i = 0; i < n; ++i)
      recvs.push_back(RecvWr::into(mr.local(buf, static_cast<uint32_t>(buf)), 0x8000'0000'0000'0000ull | i));
    return qp.post_recv(std::span<RecvWr>(recvs));
  }

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
                  p.ud ? "ud" : "rc", o.wait);
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
      return qp.post_send(wr);
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
      if (auto s = qp.post_send(wr); !s) return std::unexpected(s.error());
      auto n = wait_cq();
      if (!n) return std::unexpected(n.error());
    }
    ticks.to_ns(posted);
    return latency_report(posted, is_atomic(p.op) ? 8 : size, 1);
  }

  // --- bandwidth ------------------------------------------------------------------------------
  // The client keeps tx_depth WRs outstanding, signals every cq_mod-th (and the last), stamps
  // each post and each signalled completion (perftest's tposted/tcompleted).
  Result<BandwidthReport> stream(uint64_t size) {
    SendWr wr = make_wr(size);
    if (p.op != BenchOp::read && !is_atomic(p.op) && size <= inline_max) wr.inlined();
    const bool timed = p.duration_ms > 0;
    const uint64_t total = timed ? UINT64_MAX : p.iters;
    std::vector<int64_t> posted, completed;
    const size_t guess = timed ? 1 << 20 : p.iters;
    posted.reserve(guess);
    completed.reserve(guess);
    const int64_t end = timed ? mono_ns() + int64_t{p.duration_ms} * 1'000'000 : 0;
    uint64_t scnt = 0, ccnt = 0, limit = total;
    Ticks ticks;
    while (ccnt < limit) {
      while (scnt < limit && scnt - ccnt < p.tx_depth) {
        if (timed && scnt % p.cq_mod == 0 && mono_ns() >= end) {
          // Stop at a signalled boundary: the last posted WR was signalled.
          limit = scnt;
          break;
        }
        const bool sig = (scnt + 1) % p.cq_mod == 0 || scnt + 1 == limit;
        wr.wr.wr_id = scnt;
        wr.signaled(sig);
        if (p.op == BenchOp::write_imm) wr.wr.imm_data = htonl(static_cast<uint32_t>(scnt));
        posted.push_back(Ticks::now());
        completed.push_back(0);
        if (auto s = qp.post_send(wr); !s) return std::unexpected(s.error());
        ++scnt;
      }
      if (ccnt >= limit) break;
      // A signalled WR completes after up to cq_mod messages: allow 1 s per MiB of them on top
      // (8 MiB messages on an emulated rxe take seconds each).
      auto n = wait_cq(timeout + milliseconds((uint64_t{p.cq_mod} * size >> 20) * 1000));
      if (!n) return std::unexpected(n.error());
      const int64_t t = Ticks::now();
      for (int i = 0; i < *n; ++i) {
        const uint64_t id = wcs[static_cast<size_t>(i)].wr_id;
        completed[id] = t;
        ccnt = id + 1;
      }
    }
    ticks.to_ns(posted);
    ticks.to_ns(completed);
    return bandwidth_report(posted, completed, is_atomic(p.op) ? 8 : size, p.cq_mod);
  }

  // Server side of SEND / WRITE_IMM bandwidth: take receives until all came (RC) or the client
  // says it is done (its barrier byte on the side channel; UD may lose some).
  Status sink(uint64_t size) {
    received = 0;
    uint32_t used = 0;
    int idle = 0;
    for (;;) {
      if (!p.duration_ms && received >= p.iters) return {};
      auto n = waiter.wait(wcs, milliseconds(10));
      if (!n) return std::unexpected(n.error());
      for (int i = 0; i < *n; ++i) {
        if (auto s = checked(wcs[static_cast<size_t>(i)]); !s) return s;
        ++received;
        ++used;
      }
      if (used >= rx_depth / 4) {
        if (auto s = post_recvs(used, size); !s) return s;
        used = 0;
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
          received += static_cast<uint64_t>(*m);
          used += static_cast<uint32_t>(*m);
          continue;
        }
        break;
      }
      if (++idle * 10 > timeout.count() + p.duration_ms)
        return fail("bench: no message within {} ms", timeout.count());
    }
    if (used)
      if (auto s = post_recvs(used, size); !s) return s;
    return {};
  }
};

// perftest's defaults for what the user left at 0.
BenchParams params_of(const Options& o) {
  BenchParams p;
  p.op = *parse_bench_op(o.op);
  p.test = o.test == "bw" ? BenchTest::bw : BenchTest::lat;
  p.ud = o.qp == "ud";
  p.all_sizes = o.all;
  const bool lat = p.test == BenchTest::lat;
  p.size = o.size ? o.size : is_atomic(p.op) ? 8 : lat ? 2 : 65536;
  p.iters = o.iters ? o.iters : lat ? 1000 : 5000;
  p.duration_ms = static_cast<uint32_t>(o.duration_s * 1000);
  p.tx_depth = o.tx_depth ? o.tx_depth : lat ? 1 : 128;
  p.cq_mod = o.cq_mod ? o.cq_mod : lat ? 1 : std::min<uint32_t>(100, p.tx_depth);
  return p;
}

std::string latency_json(const BenchParams& p, const Options& o, const std::string& dev,
                         const LatencyReport& r) {
  return fmt::format(
      "{{\"test\":\"lat\",\"op\":\"{}\",\"qp\":\"{}\",\"wait\":\"{}\",\"device\":\"{}\",\"size\":{},"
      "\"iters\":{},\"unit\":\"usec\",\"rtt_divisor\":{},\"t_min\":{:.3f},\"t_max\":{:.3f},"
      "\"t_typical\":{:.3f},\"t_avg\":{:.3f},\"t_stdev\":{:.3f},\"p99\":{:.3f},\"p99_9\":{:.3f}}}\n",
      to_string(p.op), p.ud ? "ud" : "rc", o.wait, dev, r.size, r.iters, is_one_sided_round(p.op) ? 1 : 2,
      r.min_us, r.max_us, r.typical_us, r.avg_us, r.stdev_us, r.p99_us, r.p999_us);
}

std::string bandwidth_json(const BenchParams& p, const Options& o, const std::string& dev,
                           const BandwidthReport& r) {
  return fmt::format(
      "{{\"test\":\"bw\",\"op\":\"{}\",\"qp\":\"{}\",\"wait\":\"{}\",\"device\":\"{}\",\"size\":{},"
      "\"iters\":{},\"tx_depth\":{},\"cq_mod\":{},\"bw_peak_mbps\":{:.3f},\"bw_avg_mbps\":{:.3f},"
      "\"msg_rate_mpps\":{:.6f}}}\n",
      to_string(p.op), p.ud ? "ud" : "rc", o.wait, dev, r.size, r.iters, p.tx_depth, p.cq_mod, r.peak_mbps,
      r.avg_mbps, r.msg_rate_mpps);
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
uint32_t inline_wanted(const BenchParams& p, const Options& o) {
  if (o.inline_size >= 0) return static_cast<uint32_t>(o.inline_size);
  if (p.test == BenchTest::lat && !is_one_sided_round(p.op))
    return p.op == BenchOp::send ? (p.ud ? 188 : 236) : 220;
  return 0;
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
    if (lat && !is_one_sided_round(mine.op)) {
      auto r = b.pingpong(size);
      if (!r) return std::unexpected(r.error());
      if (!o.server) {
        line = o.json ? latency_json(mine, o, dev_name, *r) : latency_line(*r);
        if (cdf)
          for (double v : r->sorted_us) fmt::print(cdf, "{} {:.3f}\n", size, v);
      }
    } else if (o.server) {
      // One-sided operations leave the server idle; SEND/WRITE_IMM streams end in its CQ.
      if (!lat && needs_recv(mine.op))
        if (auto s = b.sink(size); !s) return s;
    } else if (lat) {
      auto r = b.round_trips(size);
      if (!r) return std::unexpected(r.error());
      line = o.json ? latency_json(mine, o, dev_name, *r) : latency_line(*r);
      if (cdf)
        for (double v : r->sorted_us) fmt::print(cdf, "{} {:.3f}\n", r->size, v);
    } else {
      auto r = b.stream(size);
      if (!r) return std::unexpected(r.error());
      line = o.json ? bandwidth_json(mine, o, dev_name, *r) : bandwidth_line(*r);
    }
    if (auto s = b.chan.barrier(run_limit); !s) return s;
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
Status run_sizes(Bench& b, const std::vector<uint64_t>& sizes, uint32_t mtu) {
  const Options& o = b.o;
  const BenchParams& mine = b.p;
  const bool lat = mine.test == BenchTest::lat;
  const std::string dev_name = b.dev.name();
  std::FILE* cdf = nullptr;
  if (!o.cdf.empty() && !o.server) {
    cdf = std::fopen(o.cdf.c_str(), "w");
    if (!cdf) return fail_errno(fmt::format("open {}", o.cdf), errno);
  }
  if (!o.server && !o.json) {
    fmt::print(
        "# weft rdma bench: {} {} {} over {} on {} (MTU {}), wait {}, tx_depth {}, cq_mod {}, inline {}{}\n",
        to_string(mine.op), lat ? "latency" : "bandwidth", mine.ud ? "UD" : "RC", dev_name, dev_name, mtu,
        o.wait, mine.tx_depth, mine.cq_mod, b.inline_max,
        mine.duration_ms ? fmt::format(", {} s per size", o.duration_s)
                         : fmt::format(", {} iterations", mine.iters));
    fmt::print("{}", lat ? latency_header() : bandwidth_header());
  }
  auto ran = each_size(b, sizes, cdf);
  if (cdf) std::fclose(cdf);
  return ran;
}

// The arguments on their own, before any device or peer.
Status check_usage(const BenchParams& mine, const Options& o) {
  if (auto s = validate(mine); !s) return s;
  if (mine.test == BenchTest::lat && mine.op == BenchOp::write && o.wait != "busy")
    return fail("WRITE latency polls memory for the peer's WRITE (like ib_write_lat): use --wait busy");
  return {};
}

// `usage` is set when the error is the user's arguments (exit 2).
Status run(const Options& o, bool& usage) {
  const BenchParams mine = params_of(o);
  if (auto s = check_usage(mine, o); !s) {
    usage = true;
    return s;
  }
  const milliseconds timeout(o.timeout_ms);
  const auto mode = *parse_wait_mode(o.wait);

  // The device first: a UD size above its MTU is a usage error, said before waiting for a peer.
  auto dev = Device::open(o.device);
  if (!dev) return std::unexpected(dev.error());
  auto port = dev->port(1);
  if (!port) return std::unexpected(port.error());
  const uint32_t mtu = 128u << static_cast<int>(port->active_mtu);
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
  auto gid = dev->roce_v2_gid(*addr);
  if (!gid) return std::unexpected(gid.error());
  ConnectOptions co;
  co.gid_index = static_cast<int>(gid->index);
  co.mtu = port->active_mtu;
  // As many READs/atomics in flight as the device allows (perftest's default), up to tx_depth.
  co.max_rd_atomic = static_cast<uint8_t>(std::clamp<int>(
      std::min({caps->max_qp_rd_atom, caps->max_qp_init_rd_atom, int(mine.tx_depth)}), 1, 255));

  auto pd = ProtectionDomain::create(*dev);
  if (!pd) return std::unexpected(pd.error());
  const uint32_t rx_depth = needs_recv(mine.op) ? std::max<uint32_t>(512, mine.tx_depth) : 1;
  auto cq = CompletionQueue::create(*dev, static_cast<int>(mine.tx_depth + rx_depth + 16), mode);
  if (!cq) return std::unexpected(cq.error());
  QpOptions qo;
  qo.type = mine.ud ? QpType::ud : QpType::rc;
  qo.max_send_wr = mine.tx_depth;
  qo.max_recv_wr = rx_depth;
  qo.signal_all = false;
  const uint32_t want_inline = inline_wanted(mine, o);
  qo.max_inline = want_inline;
  auto qp = QueuePair::create(*pd, *cq, *cq, qo);
  if (!qp) return std::unexpected(qp.error());
  const uint64_t max_size = sizes.back();
  const size_t buf = (max_size + kGrhBytes + 4095) / 4096 * 4096;
  auto mr = MemoryRegion::allocate(*pd, 2 * buf, access::all);
  if (!mr) return std::unexpected(mr.error());
  auto waiter = CompletionWaiter::create(*cq, mode);
  if (!waiter) return std::unexpected(waiter.error());
  if (auto* pl = waiter->poller())
    if (auto s = pl->watch_fd(chan->fd(), kPeerTag); !s) return s;

  const uint32_t psn = static_cast<uint32_t>(mono_ns()) & 0xffffff;
  EndpointInfo me{QpAddress{qp->qpn(), psn, 0, gid->gid}, mr->remote(buf, static_cast<uint32_t>(buf)),
                  co.qkey};
  auto peer = chan->exchange(me, timeout);
  if (!peer) return std::unexpected(peer.error());
  if (auto s = qp->connect(co, psn, peer->qp); !s) return s;
  std::optional<AddressHandle> ah;
  if (mine.ud) {
    auto a = AddressHandle::create(*pd, co, peer->qp.gid, peer->qp.lid);
    if (!a) return std::unexpected(a.error());
    ah.emplace(std::move(*a));
  }
  Bench b{.o = o,
          .p = mine,
          .active = !o.server,
          .timeout = timeout,
          .chan = *chan,
          .dev = std::move(*dev),
          .qp = std::move(*qp),
          .mr = std::move(*mr),
          .cq = *cq,
          .waiter = *waiter,
          .ah = std::move(ah),
          .peer = *peer};
  b.buf = buf;
  b.recv_off = mine.ud ? kGrhBytes : 0;
  b.inline_max = std::min(want_inline, b.qp.max_inline());
  b.rx_depth = rx_depth;
  if (needs_recv(mine.op))
    if (auto s = b.post_recvs(rx_depth, 0); !s) return s;

  return run_sizes(b, sizes, mtu);
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto opts = std::make_shared<Options>();
  Options& o = *opts;
  auto* sub = root.rdma->add_subcommand(
      "bench",
      "perftest-style latency/bandwidth of SEND, WRITE, WRITE_IMM, READ, FAA, CAS (RC; SEND also UD)");
  auto* srv = sub->add_flag("--server", o.server, "wait for a client");
  auto* cli = sub->add_option("--client", o.client, "connect to the server at HOST");
  srv->excludes(cli);
  sub->add_option("--bind", o.bind, "server: side-channel address to listen on")->capture_default_str();
  sub->add_option("--port", o.port, "side-channel TCP port")->capture_default_str();
  weft::cli::add_device_option(sub, o.device);
  sub->add_option("--op", o.op, "send|write|write_imm|read|faa|cas")
      ->capture_default_str()
      ->check(CLI::IsMember({"send", "write", "write_imm", "write_with_imm", "read", "faa", "fetch_add",
                             "atomic_faa", "cas", "compare_swap", "atomic_cas"}));
  sub->add_option("--test", o.test, "lat (ping-pong RTT/2; READ/atomics full RTT) or bw")
      ->capture_default_str()
      ->check(CLI::IsMember({"lat", "bw"}));
  sub->add_option("--qp", o.qp, "rc|ud (UD: SEND only, size <= MTU)")
      ->capture_default_str()
      ->check(CLI::IsMember({"rc", "ud"}));
  sub->add_option("--wait", o.wait, "busy|channel|epoll")
      ->capture_default_str()
      ->check(CLI::IsMember({"busy", "channel", "epoll"}));
  sub->add_flag("-a,--all", o.all, "sweep sizes 2 B .. 8 MiB (UD: .. the MTU)");
  sub->add_option("-s,--size", o.size, "message bytes (default 2 lat, 65536 bw, 8 atomics)")
      ->check(CLI::Range(uint64_t{1}, kRdmaMaxMessage));
  sub->add_option("-n,--iters", o.iters, "iterations per size (default 1000 lat, 5000 bw)")
      ->check(CLI::Range(uint64_t{5}, uint64_t{100'000'000}));
  sub->add_option("-D,--duration", o.duration_s, "seconds per size instead of --iters")
      ->check(CLI::Range(0.1, 3600.0));
  sub->add_option("-t,--tx-depth", o.tx_depth, "send queue depth / WRs in flight (default 1 lat, 128 bw)")
      ->check(CLI::Range(1, 16384));
  sub->add_option("-Q,--cq-mod", o.cq_mod,
                  "signal one WR in this many (default 1 lat, min(100, tx_depth) bw)")
      ->check(CLI::Range(1, 16384));
  sub->add_option("-I,--inline", o.inline_size, "inline up to this many bytes (default like perftest)")
      ->check(CLI::Range(0, 4096));
  sub->add_flag("--json", o.json, "one JSON object per size instead of perftest-like text");
  sub->add_option("--cdf", o.cdf, "client, latency: write the kept samples (size usec) to this file");
  weft::cli::add_timeout_ms_option(sub, o.timeout_ms, "limit for each wait for the peer");
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
