#pragma once
// Work requests as plain values: build them with the named constructors, post one or a list
// with QueuePair::post_send / post_recv (which chain them without allocating). Each holds one
// scatter/gather entry, which is what every example and probe here needs.
#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <cstdint>
#include <span>

#include "rdma/memory_region.hpp"

namespace weft::rdma {

class SendWr {
 public:
  static SendWr send(LocalBuf buf, uint64_t wr_id) { return SendWr(IBV_WR_SEND, buf, wr_id); }
  static SendWr send_imm(LocalBuf buf, uint32_t imm, uint64_t wr_id) {
    SendWr w(IBV_WR_SEND_WITH_IMM, buf, wr_id);
    w.wr.imm_data = htonl(imm);
    return w;
  }
  static SendWr write(LocalBuf buf, RemoteBuf to, uint64_t wr_id) {
    SendWr w(IBV_WR_RDMA_WRITE, buf, wr_id);
    w.set_remote(to);
    return w;
  }
  static SendWr write_imm(LocalBuf buf, RemoteBuf to, uint32_t imm, uint64_t wr_id) {
    SendWr w(IBV_WR_RDMA_WRITE_WITH_IMM, buf, wr_id);
    w.set_remote(to);
    w.wr.imm_data = htonl(imm);
    return w;
  }
  static SendWr read(LocalBuf into, RemoteBuf from, uint64_t wr_id) {
    SendWr w(IBV_WR_RDMA_READ, into, wr_id);
    w.set_remote(from);
    return w;
  }
  // Atomics act on 8 aligned bytes at `at`; the old value lands in `old` (8 bytes).
  static SendWr compare_swap(LocalBuf old, RemoteBuf at, uint64_t compare, uint64_t swap, uint64_t wr_id) {
    SendWr w(IBV_WR_ATOMIC_CMP_AND_SWP, old, wr_id);
    w.sge.length = 8;
    w.wr.wr.atomic = {at.addr, compare, swap, at.rkey};
    return w;
  }
  static SendWr fetch_add(LocalBuf old, RemoteBuf at, uint64_t add, uint64_t wr_id) {
    SendWr w(IBV_WR_ATOMIC_FETCH_AND_ADD, old, wr_id);
    w.sge.length = 8;
    w.wr.wr.atomic = {at.addr, add, 0, at.rkey};
    return w;
  }

  // Signalled WRs produce a completion; with selective signalling (QpOptions::signal_all false)
  // only these do. The default is signalled.
  SendWr& signaled(bool on = true) {
    wr.send_flags = on ? (wr.send_flags | IBV_SEND_SIGNALED) : (wr.send_flags & ~unsigned{IBV_SEND_SIGNALED});
    return *this;
  }
  // Data copied into the WQE at post time (length <= QueuePair::max_inline(); lkey unused).
  SendWr& inlined(bool on = true) {
    wr.send_flags = on ? (wr.send_flags | IBV_SEND_INLINE) : (wr.send_flags & ~unsigned{IBV_SEND_INLINE});
    return *this;
  }
  // Waits for every earlier READ/atomic on this QP to complete before this WR starts (RC orders
  // WRITEs and SENDs among themselves, not after READs): e.g. a WRITE that frees a buffer a READ
  // is still pulling from.
  SendWr& fenced(bool on = true) {
    wr.send_flags = on ? (wr.send_flags | IBV_SEND_FENCE) : (wr.send_flags & ~unsigned{IBV_SEND_FENCE});
    return *this;
  }
  SendWr& solicited() {
    wr.send_flags |= IBV_SEND_SOLICITED;
    return *this;
  }
  // UD destination.
  SendWr& to(ibv_ah* ah, uint32_t remote_qpn, uint32_t qkey) {
    wr.wr.ud = {ah, remote_qpn, qkey};
    return *this;
  }

  ibv_send_wr wr{};
  ibv_sge sge{};

 private:
  SendWr(ibv_wr_opcode op, LocalBuf buf, uint64_t wr_id) {
    wr.wr_id = wr_id;
    wr.opcode = op;
    wr.send_flags = IBV_SEND_SIGNALED;
    sge = {reinterpret_cast<uint64_t>(buf.addr), buf.length, buf.lkey};
  }
  void set_remote(RemoteBuf r) { wr.wr.rdma = {r.addr, r.rkey}; }
};

class RecvWr {
 public:
  static RecvWr into(LocalBuf buf, uint64_t wr_id) {
    RecvWr r;
    r.wr.wr_id = wr_id;
    r.sge = {reinterpret_cast<uint64_t>(buf.addr), buf.length, buf.lkey};
    return r;
  }
  ibv_recv_wr wr{};
  ibv_sge sge{};
};

// Links wrs into one list (next pointers, sg_list) for posting; no allocation.
inline void chain(std::span<RecvWr> wrs) {
  for (size_t i = 0; i < wrs.size(); ++i) {
    wrs[i].wr.sg_list = &wrs[i].sge;
    wrs[i].wr.num_sge = 1;
    wrs[i].wr.next = i + 1 < wrs.size() ? &wrs[i + 1].wr : nullptr;
  }
}

inline void chain(std::span<SendWr> wrs) {
  for (size_t i = 0; i < wrs.size(); ++i) {
    auto& w = wrs[i];
    w.wr.sg_list = &w.sge;
    // A zero-length SEND or WRITE carries no scatter/gather entry.
    w.wr.num_sge = w.sge.length > 0 ? 1 : 0;
    w.wr.next = i + 1 < wrs.size() ? &wrs[i + 1].wr : nullptr;
  }
}

// The immediate value of a completion, in host order.
inline uint32_t imm_of(const ibv_wc& wc) { return ntohl(wc.imm_data); }

// UD receive buffers start with the 40-byte GRH the device writes before the payload.
inline constexpr uint32_t kGrhBytes = 40;

}  // namespace weft::rdma
