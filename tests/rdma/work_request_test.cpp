#include "rdma/work_request.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>

using namespace weft::rdma;

namespace {
uint64_t buf_storage[16];
LocalBuf local(size_t off, uint32_t len) {
  return LocalBuf{reinterpret_cast<char*>(buf_storage) + off, len, 0x77};
}
}  // namespace

TEST(WorkRequest, SendFlagsAndImmediate) {
  auto w = SendWr::send_imm(local(0, 16), 0x01020304, 9);
  EXPECT_EQ(w.wr.opcode, IBV_WR_SEND_WITH_IMM);
  EXPECT_EQ(w.wr.wr_id, 9u);
  EXPECT_EQ(w.wr.imm_data, htonl(0x01020304));  // network order on the wire
  EXPECT_TRUE(w.wr.send_flags & IBV_SEND_SIGNALED);
  w.signaled(false).inlined();
  EXPECT_FALSE(w.wr.send_flags & IBV_SEND_SIGNALED);
  EXPECT_TRUE(w.wr.send_flags & IBV_SEND_INLINE);
  EXPECT_FALSE(w.wr.send_flags & IBV_SEND_FENCE);
  w.fenced();
  EXPECT_TRUE(w.wr.send_flags & IBV_SEND_FENCE);
  EXPECT_TRUE(w.wr.send_flags & IBV_SEND_INLINE);  // the other flags stay
  w.fenced(false);
  EXPECT_FALSE(w.wr.send_flags & IBV_SEND_FENCE);
  ibv_wc wc{};
  wc.imm_data = w.wr.imm_data;
  EXPECT_EQ(imm_of(wc), 0x01020304u);
}

TEST(WorkRequest, RdmaAndAtomicTargets) {
  RemoteBuf r{0x1000, 0xabc, 64};
  auto wr = SendWr::write_imm(local(0, 32), r, 5, 1);
  EXPECT_EQ(wr.wr.opcode, IBV_WR_RDMA_WRITE_WITH_IMM);
  EXPECT_EQ(wr.wr.wr.rdma.remote_addr, 0x1000u);
  EXPECT_EQ(wr.wr.wr.rdma.rkey, 0xabcu);
  auto rd = SendWr::read(local(0, 32), r, 2);
  EXPECT_EQ(rd.wr.opcode, IBV_WR_RDMA_READ);
  auto cas = SendWr::compare_swap(local(0, 100), r, 7, 8, 3);
  EXPECT_EQ(cas.wr.opcode, IBV_WR_ATOMIC_CMP_AND_SWP);
  EXPECT_EQ(cas.sge.length, 8u);  // atomics move 8 bytes whatever the buffer
  EXPECT_EQ(cas.wr.wr.atomic.compare_add, 7u);
  EXPECT_EQ(cas.wr.wr.atomic.swap, 8u);
  EXPECT_EQ(cas.wr.wr.atomic.rkey, 0xabcu);
  auto faa = SendWr::fetch_add(local(0, 8), r, 42, 4);
  EXPECT_EQ(faa.wr.opcode, IBV_WR_ATOMIC_FETCH_AND_ADD);
  EXPECT_EQ(faa.wr.wr.atomic.compare_add, 42u);
}

TEST(WorkRequest, ChainLinksAListWithoutCopies) {
  std::array<SendWr, 3> wrs = {SendWr::send(local(0, 8), 1), SendWr::send(local(8, 0), 2),
                               SendWr::send(local(16, 8), 3)};
  chain(wrs);
  EXPECT_EQ(wrs[0].wr.next, &wrs[1].wr);
  EXPECT_EQ(wrs[1].wr.next, &wrs[2].wr);
  EXPECT_EQ(wrs[2].wr.next, nullptr);
  EXPECT_EQ(wrs[0].wr.sg_list, &wrs[0].sge);
  EXPECT_EQ(wrs[0].wr.num_sge, 1);
  EXPECT_EQ(wrs[1].wr.num_sge, 0);  // zero-length send: no SGE
  EXPECT_EQ(wrs[2].sge.addr, reinterpret_cast<uint64_t>(buf_storage) + 16);
  EXPECT_EQ(wrs[2].sge.lkey, 0x77u);
  std::array<RecvWr, 2> rs = {RecvWr::into(local(0, 8), 10), RecvWr::into(local(8, 8), 11)};
  chain(rs);
  EXPECT_EQ(rs[0].wr.next, &rs[1].wr);
  EXPECT_EQ(rs[1].wr.next, nullptr);
  EXPECT_EQ(rs[1].wr.wr_id, 11u);
}
