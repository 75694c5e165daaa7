// perftest's latency loops for `weft rdma bench`: ping-pong for SEND, WRITE_IMM and WRITE, and
// round trips for READ and the atomics (rdma_bench_runs.hpp).
#include <arpa/inet.h>

#include "base/clock.hpp"
#include "cli/rdma_bench_runs.hpp"
#include "cli/rdma_bench_ticks.hpp"

namespace weft::cli {

using namespace weft::rdma;
using std::chrono::milliseconds;

Result<bool> Bench::reap(bool block) {
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

Result<LatencyReport> Bench::pingpong(uint64_t size) {
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

Result<LatencyReport> Bench::round_trips(uint64_t size) {
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
}  // namespace weft::cli
