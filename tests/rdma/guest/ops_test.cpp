// Every operation over RC (and UC, UD): bytes checked on the receiving side.
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "guest_helpers.hpp"
#include "rdma/address_handle.hpp"
#include "rdma/shared_receive_queue.hpp"

using namespace wrd;

namespace {
struct RcPair : ::testing::Test {
  ProtectionDomain pd = must(ProtectionDomain::create(device()), "pd");
  Side a = make_side(pd);
  Side b = make_side(pd);
  void SetUp() override { connect_pair(a, b); }
  char* abuf() { return reinterpret_cast<char*>(a.mr.data()); }
  char* bbuf() { return reinterpret_cast<char*>(b.mr.data()); }
};
}  // namespace

TEST_F(RcPair, SendRecv) {
  auto r = RecvWr::into(b.mr.local(0, 64), 1);
  must(b.qp.post_recv(r), "post recv");
  std::strcpy(abuf(), "hello over rxe");
  auto s = SendWr::send(a.mr.local(0, 15), 2);
  must(a.qp.post_send(s), "post send");
  EXPECT_EQ(wait_ok(a.scq).opcode, IBV_WC_SEND);
  ibv_wc wc = wait_ok(b.rcq);
  EXPECT_EQ(wc.opcode, IBV_WC_RECV);
  EXPECT_EQ(wc.wr_id, 1u);
  EXPECT_EQ(wc.byte_len, 15u);
  EXPECT_STREQ(bbuf(), "hello over rxe");
}

TEST_F(RcPair, SendWithImmediate) {
  auto r = RecvWr::into(b.mr.local(0, 64), 1);
  must(b.qp.post_recv(r), "post recv");
  auto s = SendWr::send_imm(a.mr.local(0, 8), 0xC0FFEE, 2);
  must(a.qp.post_send(s), "post send");
  wait_ok(a.scq);
  ibv_wc wc = wait_ok(b.rcq);
  EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(imm_of(wc), 0xC0FFEEu);
}

TEST_F(RcPair, WriteReadBack) {
  for (int i = 0; i < 1024; ++i) abuf()[i] = static_cast<char>(i * 7);
  auto w = SendWr::write(a.mr.local(0, 1024), b.mr.remote(2048, 1024), 3);
  must(a.qp.post_send(w), "post write");
  EXPECT_EQ(wait_ok(a.scq).opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(std::memcmp(abuf(), bbuf() + 2048, 1024), 0);
  // READ it back into another part of a's buffer.
  auto rd = SendWr::read(a.mr.local(1024, 1024), b.mr.remote(2048, 1024), 4);
  must(a.qp.post_send(rd), "post read");
  EXPECT_EQ(wait_ok(a.scq).opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(std::memcmp(abuf(), abuf() + 1024, 1024), 0);
}

TEST_F(RcPair, WriteWithImmediateConsumesAReceive) {
  auto r = RecvWr::into(b.mr.local(0, 0), 9);
  must(b.qp.post_recv(r), "post recv");
  std::memset(abuf(), 'w', 100);
  auto w = SendWr::write_imm(a.mr.local(0, 100), b.mr.remote(500, 100), 42, 5);
  must(a.qp.post_send(w), "post write_imm");
  wait_ok(a.scq);
  ibv_wc wc = wait_ok(b.rcq);
  EXPECT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_EQ(imm_of(wc), 42u);
  EXPECT_EQ(wc.wr_id, 9u);
  EXPECT_EQ(bbuf()[500], 'w');
  EXPECT_EQ(bbuf()[599], 'w');
  EXPECT_EQ(bbuf()[600], 0);
}

TEST_F(RcPair, AtomicsCompareSwapAndFetchAdd) {
  auto* target = reinterpret_cast<uint64_t*>(b.mr.data() + 64);
  auto* old = reinterpret_cast<uint64_t*>(a.mr.data());
  *target = 10;
  auto faa = SendWr::fetch_add(a.mr.local(0, 8), b.mr.remote(64, 8), 5, 1);
  must(a.qp.post_send(faa), "faa");
  EXPECT_EQ(wait_ok(a.scq).opcode, IBV_WC_FETCH_ADD);
  EXPECT_EQ(*old, 10u);
  EXPECT_EQ(*target, 15u);
  auto miss = SendWr::compare_swap(a.mr.local(0, 8), b.mr.remote(64, 8), 99, 1, 2);
  must(a.qp.post_send(miss), "cas miss");
  EXPECT_EQ(wait_ok(a.scq).opcode, IBV_WC_COMP_SWAP);
  EXPECT_EQ(*old, 15u);
  EXPECT_EQ(*target, 15u);  // compare failed: unchanged
  auto hit = SendWr::compare_swap(a.mr.local(0, 8), b.mr.remote(64, 8), 15, 1000, 3);
  must(a.qp.post_send(hit), "cas hit");
  wait_ok(a.scq);
  EXPECT_EQ(*old, 15u);
  EXPECT_EQ(*target, 1000u);
}

TEST_F(RcPair, ListOfWritesWithInlineData) {
  ASSERT_GE(a.qp.max_inline(), 16u);
  std::vector<SendWr> wrs;
  for (int i = 0; i < 8; ++i) {
    std::memset(abuf() + i * 16, 'a' + i, 16);
    wrs.push_back(SendWr::write(a.mr.local(i * 16, 16), b.mr.remote(i * 16, 16), 100 + i).inlined());
  }
  must(a.qp.post_send(wrs), "post list");
  // Inline data was copied at post time: changing the source now does not change what lands.
  std::memset(abuf(), 0, 128);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(wait_ok(a.scq).wr_id, 100u + i);  // in order
  for (int i = 0; i < 8; ++i) EXPECT_EQ(bbuf()[i * 16 + 15], 'a' + i);
}

TEST(RcSelectiveSignalling, OnlySignalledWritesComplete) {
  auto pd = must(ProtectionDomain::create(device()), "pd");
  QpOptions o;
  o.signal_all = false;
  Side a = make_side(pd, o), b = make_side(pd);
  connect_pair(a, b);
  std::vector<SendWr> wrs;
  for (int i = 0; i < 16; ++i) {
    a.mr.data()[i] = static_cast<std::byte>(i + 1);
    wrs.push_back(SendWr::write(a.mr.local(i, 1), b.mr.remote(i, 1), i).signaled(i == 15));
  }
  must(a.qp.post_send(wrs), "post");
  ibv_wc wc = wait_ok(a.scq);
  EXPECT_EQ(wc.wr_id, 15u);
  ibv_wc more[4];
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(must(a.scq.poll(more), "poll"), 0);  // the 15 unsignalled ones made none
  // RC completes in order: the signalled last one means all have landed.
  for (int i = 0; i < 16; ++i) EXPECT_EQ(b.mr.data()[i], static_cast<std::byte>(i + 1));
}

TEST(Uc, WriteAndSend) {
  auto pd = must(ProtectionDomain::create(device()), "pd");
  QpOptions o;
  o.type = QpType::uc;
  Side a = make_side(pd, o), b = make_side(pd, o);
  connect_pair(a, b);
  std::memset(a.mr.data(), 'u', 256);
  auto w = SendWr::write(a.mr.local(0, 256), b.mr.remote(0, 256), 1);
  must(a.qp.post_send(w), "write");
  wait_ok(a.scq);
  auto r = RecvWr::into(b.mr.local(1024, 256), 2);
  must(b.qp.post_recv(r), "recv");
  auto s = SendWr::send(a.mr.local(0, 100), 3);
  must(a.qp.post_send(s), "send");
  wait_ok(a.scq);
  EXPECT_EQ(wait_ok(b.rcq).byte_len, 100u);
  EXPECT_EQ(static_cast<char>(b.mr.data()[255]), 'u');
  EXPECT_EQ(static_cast<char>(b.mr.data()[1024 + 99]), 'u');
}

TEST(Ud, SendThroughAddressHandleWithGrh) {
  auto pd = must(ProtectionDomain::create(device()), "pd");
  QpOptions o;
  o.type = QpType::ud;
  Side a = make_side(pd, o), b = make_side(pd, o);
  auto co = connect_options();
  must(a.qp.connect(co, 1, {}), "a up");
  must(b.qp.connect(co, 2, {}), "b up");
  auto ah = must(AddressHandle::create(pd, co, gid_from_ipv4(local_in_addr())), "ah");
  for (uint32_t i = 0; i < 4; ++i) {
    auto r = RecvWr::into(b.mr.local(i * 512, kGrhBytes + 256), i);
    must(b.qp.post_recv(r), "recv");
  }
  for (uint32_t i = 0; i < 4; ++i) {
    std::memset(a.mr.data(), 'A' + static_cast<int>(i), 200);
    auto s = SendWr::send_imm(a.mr.local(0, 200), i, 10 + i).to(ah.raw(), b.qp.qpn(), co.qkey);
    must(a.qp.post_send(s), "send");
    wait_ok(a.scq);
    ibv_wc wc = wait_ok(b.rcq);
    EXPECT_EQ(wc.byte_len, kGrhBytes + 200);  // the GRH counts
    EXPECT_EQ(wc.src_qp, a.qp.qpn());
    EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
    EXPECT_EQ(imm_of(wc), i);
    const auto* payload = reinterpret_cast<const char*>(b.mr.data()) + wc.wr_id * 512 + kGrhBytes;
    EXPECT_EQ(payload[0], 'A' + static_cast<int>(i));
    EXPECT_EQ(payload[199], 'A' + static_cast<int>(i));
  }
}

TEST(Srq, TwoQpsReceiveFromOnePool) {
  auto pd = must(ProtectionDomain::create(device()), "pd");
  auto srq = must(SharedReceiveQueue::create(pd, 64), "srq");
  auto cq = must(CompletionQueue::create(device(), 64), "cq");
  auto mr = must(MemoryRegion::allocate(pd, 8192), "mr");
  auto r1 = must(QueuePair::create(pd, cq, cq, QpOptions{}, &srq), "qp1");
  auto r2 = must(QueuePair::create(pd, cq, cq, QpOptions{}, &srq), "qp2");
  Side s1 = make_side(pd), s2 = make_side(pd);
  auto o = connect_options();
  must(r1.connect(o, 1, address_of(s1.qp, 2)), "r1");
  must(s1.qp.connect(o, 2, address_of(r1, 1)), "s1");
  must(r2.connect(o, 3, address_of(s2.qp, 4)), "r2");
  must(s2.qp.connect(o, 4, address_of(r2, 3)), "s2");
  std::vector<RecvWr> recvs;
  for (int i = 0; i < 4; ++i) recvs.push_back(RecvWr::into(mr.local(i * 1024, 1024), i));
  must(srq.post_recv(recvs), "srq post");
  auto x = SendWr::send(s1.mr.local(0, 11), 1);
  auto y = SendWr::send(s2.mr.local(0, 22), 2);
  must(s1.qp.post_send(x), "send1");
  must(s2.qp.post_send(y), "send2");
  wait_ok(s1.scq);
  wait_ok(s2.scq);
  ibv_wc w1 = wait_ok(cq), w2 = wait_ok(cq);
  std::set<uint32_t> qps = {w1.qp_num, w2.qp_num};
  EXPECT_EQ(qps, (std::set<uint32_t>{r1.qpn(), r2.qpn()}));
  EXPECT_EQ(w1.byte_len + w2.byte_len, 33u);
}
