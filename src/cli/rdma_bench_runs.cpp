// What the runs of `weft rdma bench` stand on: receives, work requests, and waiting for
// completions while watching the peer's side channel (rdma_bench_runs.hpp).
#include "cli/rdma_bench_runs.hpp"

#include <fmt/format.h>

#include "base/clock.hpp"
#include "rdma/error.hpp"

namespace weft::cli {

using namespace weft::rdma;
using std::chrono::milliseconds;

Status Bench::post_recvs(uint32_t n, uint64_t /*size*/, size_t qi) {
  recvs.clear();
  for (uint32_t i = 0; i < n; ++i)
    recvs.push_back(RecvWr::into(mr.local(buf, static_cast<uint32_t>(buf)), 0x8000'0000'0000'0000ull | i));
  if (srq) return srq->post_recv(std::span<RecvWr>(recvs));
  return qps[qi].post_recv(std::span<RecvWr>(recvs));
}

size_t Bench::qp_index(const ibv_wc& wc) const {
  auto it = qp_of_num.find(wc.qp_num);
  return it == qp_of_num.end() ? 0 : it->second;
}

SendWr Bench::make_wr(uint64_t size) {
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

Status Bench::checked(const ibv_wc& wc) {
  auto s = check_completion(wc);
  if (s || !peer_death_can_cause(s.error().code) || !chan.peer_closed_within(milliseconds(500))) return s;
  return std::unexpected(Error{
      fmt::format("bench: the peer is gone (its side channel closed) ({})", s.error().message), ECONNRESET});
}

Status Bench::peer_alive() {
  if (!chan.peer_closed_within(milliseconds(0))) return {};
  return std::unexpected(Error{"bench: the peer is gone (its side channel closed)", ECONNRESET});
}

Result<int> Bench::wait_cq(milliseconds limit) {
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
Result<int> Bench::poll_plain() {
  auto n = cq.poll(wcs);
  if (!n || !rcq || static_cast<size_t>(*n) == wcs.size()) return n;
  auto m = rcq->poll(std::span(wcs).subspan(static_cast<size_t>(*n)));
  if (!m) return m;
  return *n + *m;
}

Result<int> Bench::wait_recvs(milliseconds limit) {
  if (!rcq) return waiter.wait(wcs, limit);
  int64_t give_up = 0;
  for (uint32_t spins = 0;; ++spins) {
    auto n = rcq->poll(wcs);
    if (!n || *n > 0) return n;
    // The clock only every 1024 empty polls, as in wait_cq.
    if ((spins & 1023) == 1023) {
      const int64_t now = mono_ns();
      if (give_up == 0)
        give_up = now + limit.count() * 1'000'000;
      else if (now > give_up)
        return 0;
    }
  }
}

}  // namespace weft::cli
