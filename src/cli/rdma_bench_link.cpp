#include "cli/rdma_bench_link.hpp"

#include <fmt/format.h>

#include "base/clock.hpp"

namespace weft::cli {

using namespace weft::rdma;

namespace {

// perftest's default: this side makes PD, CQ (with the channel the wait mode needs), SRQ and QPs.
Status make_verbs(BenchLink& l, const BenchLinkSpec& s) {
  auto pd = ProtectionDomain::create(l.dev);
  if (!pd) return std::unexpected(pd.error());
  l.own_pd.emplace(std::move(*pd));
  auto cq = CompletionQueue::create(l.dev, s.cq_depth, s.mode);
  if (!cq) return std::unexpected(cq.error());
  l.own_cq.emplace(std::move(*cq));
  if (s.recv_cq_depth > 0) {
    auto rcq = CompletionQueue::create(l.dev, s.recv_cq_depth, WaitMode::busy);
    if (!rcq) return std::unexpected(rcq.error());
    l.own_recv_cq.emplace(std::move(*rcq));
  }
  if (s.use_srq) {
    auto made = SharedReceiveQueue::create(*l.own_pd, s.srq_depth);
    if (!made) return std::unexpected(made.error());
    l.srq.emplace(std::move(*made));
  }
  for (uint32_t i = 0; i < s.num_qps; ++i) {
    auto qp = QueuePair::create(*l.own_pd, *l.own_cq, l.own_recv_cq ? *l.own_recv_cq : *l.own_cq, s.qp,
                                l.srq ? &*l.srq : nullptr);
    if (!qp) return std::unexpected(qp.error());
    l.qps.push_back(std::move(*qp));
  }
  return {};
}

// -R: rdma_cm makes the QPs, one connection each, in turn: the i-th connect meets the i-th
// accept, so qps[i] on both sides are the two ends of one connection (UD: rdma_cm's UDP port
// space; its QPs are at RTS once made, and the AH comes from the GIDs exchanged on the side
// channel as without -R, since the passive side of a SIDR exchange learns nothing). The first connection
// makes the PD and CQ and the others share them (one registration, one poll loop, as with verbs). The server
// listens before the side channel's barrier and the client connects after it, so no connect request finds
// nobody there.
Status make_cm(BenchLink& l, SideChannel& chan, const BenchLinkSpec& s) {
  CmOptions co;
  co.cq_depth = s.cq_depth;
  co.qp = s.qp;
  co.rd_atomic = s.co.max_rd_atomic;
  co.timeout = s.timeout;
  co.tos = s.tos;
  std::optional<CmListener> listener;
  if (s.server) {
    auto made = CmListener::listen(s.bind, s.port, s.qp.type);
    if (!made) return std::unexpected(made.error());
    listener.emplace(std::move(*made));
  }
  if (auto b = chan.barrier(s.timeout); !b) return b;
  l.cms.reserve(s.num_qps);  // share_with points into it
  for (uint32_t i = 0; i < s.num_qps; ++i) {
    co.share_with = l.cms.empty() ? nullptr : &l.cms.front();
    auto c = s.server ? listener->accept({}, co) : CmConnection::connect(s.client, s.port, {}, co);
    if (!c) return std::unexpected(c.error());
    l.cms.push_back(std::move(*c));
    l.qps.push_back(l.cms.back().qp());
  }
  const auto& dev = l.cms.front().device();
  if (!s.device.empty() && dev.name() != s.device)
    return fail("-R: rdma_cm connected through {}, not the -d {} asked for", dev.name(), s.device);
  l.dev = dev;
  return {};
}

}  // namespace

Result<BenchLink> link_bench(SideChannel& chan, Device dev, const BenchLinkSpec& s) {
  BenchLink l{.dev = std::move(dev)};
  if (auto made = s.rdma_cm ? make_cm(l, chan, s) : make_verbs(l, s); !made)
    return std::unexpected(made.error());
  auto mr = MemoryRegion::allocate(l.pd(), s.mr_bytes, access::all);
  if (!mr) return std::unexpected(mr.error());
  l.mr.emplace(std::move(*mr));
  const auto target_len = static_cast<uint32_t>(s.mr_bytes - s.target_off);
  // One exchange per QP, in the same order on both sides: qps[i] talks to the peer's i-th. An
  // rdma_cm QP is connected already; its record carries the buffer (and the QPN, for the log).
  for (uint32_t i = 0; i < l.qps.size(); ++i) {
    const uint32_t psn = static_cast<uint32_t>(mono_ns() + i) & 0xffffff;
    // A UD QP rdma_cm made has rdma_cm's Q_Key: senders to it must use that one.
    const uint32_t qkey = l.cms.empty() || s.qp.type != QpType::ud ? s.co.qkey : l.cms[i].qkey();
    EndpointInfo me{QpAddress{l.qps[i].qpn(), psn, 0, s.my_gid}, l.mr->remote(s.target_off, target_len),
                    qkey};
    auto peer = chan.exchange(me, s.timeout);
    if (!peer) return std::unexpected(peer.error());
    if (!s.rdma_cm)
      if (auto c = l.qps[i].connect(s.co, psn, peer->qp); !c) return std::unexpected(c.error());
    l.peers.push_back(*peer);
  }
  if (s.qp.type == QpType::ud) {
    auto a = AddressHandle::create(l.pd(), s.co, l.peers[0].qp.gid, l.peers[0].qp.lid);
    if (!a) return std::unexpected(a.error());
    l.ah.emplace(std::move(*a));
  }
  return l;
}

}  // namespace weft::cli
