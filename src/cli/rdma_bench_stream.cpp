// perftest's bandwidth loops for `weft rdma bench`: the sending stream (-q, -l, -b, --duration),
// the warm-up, and the receiving side's sink and drain (rdma_bench_runs.hpp).
#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>

#include "base/clock.hpp"
#include "base/little_endian.hpp"
#include "cli/rdma_bench_runs.hpp"
#include "cli/rdma_bench_ticks.hpp"

namespace weft::cli {

using namespace weft::rdma;
using std::chrono::milliseconds;

Result<BandwidthReport> Bench::stream(uint64_t size) {
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

Status Bench::warm_up(uint64_t size) {
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

Status Bench::took_recv(const ibv_wc& wc) {
  ++received;
  RecvWr r = RecvWr::into(mr.local(buf, static_cast<uint32_t>(buf)), wc.wr_id);
  if (srq) return srq->post_recv(r);  // one pool with --use-srq
  return qps[qp_index(wc)].post_recv(r);
}

Status Bench::drain_peer() {
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
    auto n = wait_recvs(milliseconds(10));
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

Status Bench::sink() {
  received = 0;
  int idle = 0;
  for (;;) {
    if (!p.duration_ms && received >= per_run()) break;
    auto n = wait_recvs(milliseconds(10));
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
      auto m = wait_recvs(milliseconds(1));
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
}  // namespace weft::cli
