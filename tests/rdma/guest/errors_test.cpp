// Error completions surface as errors that name the status.
#include <cstring>
#include <thread>
#include <vector>

#include "guest_helpers.hpp"

using namespace wrd;

TEST(ErrorCompletions, WriteWithBadRkeyIsRemoteAccessError) {
  auto pd = must(ProtectionDomain::create(device()), "pd");
  Side a = make_side(pd), b = make_side(pd);
  connect_pair(a, b);
  RemoteBuf bad = b.mr.remote(0, 64);
  bad.rkey ^= 0x5a5a;
  auto w = SendWr::write(a.mr.local(0, 64), bad, 7);
  must(a.qp.post_send(w), "post");
  ibv_wc wc = wait_wc(a.scq);
  EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
  auto s = check_completion(wc);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("IBV_WC_REM_ACCESS_ERR"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("wr_id 7"), std::string::npos);
  // The QP is in error now; further work is flushed.
  EXPECT_EQ(must(a.qp.state(), "state"), IBV_QPS_ERR);
  auto w2 = SendWr::write(a.mr.local(0, 8), b.mr.remote(0, 8), 8);
  must(a.qp.post_send(w2), "post after error");
  EXPECT_EQ(wait_wc(a.scq).status, IBV_WC_WR_FLUSH_ERR);
}

TEST(ErrorCompletions, WriteToReadOnlyRegionIsRemoteAccessError) {
  auto pd = must(ProtectionDomain::create(device()), "pd");
  Side a = make_side(pd), b = make_side(pd);
  connect_pair(a, b);
  std::vector<char> ro(4096);
  auto mr = must(MemoryRegion::register_memory(pd, ro.data(), ro.size(), access::local | access::remote_read),
                 "ro");
  auto w = SendWr::write(a.mr.local(0, 16), mr.remote(0, 16), 1);
  must(a.qp.post_send(w), "post");
  EXPECT_EQ(wait_wc(a.scq).status, IBV_WC_REM_ACCESS_ERR);
}

TEST(ErrorCompletions, ReceiverNotReadyExhaustsRnrRetries) {
  auto pd = must(ProtectionDomain::create(device()), "pd");
  Side a = make_side(pd), b = make_side(pd);
  auto o = connect_options();
  o.rnr_retry = 1;
  o.min_rnr_timer = 1;
  connect_pair(a, b, o);
  auto s = SendWr::send(a.mr.local(0, 32), 5);  // b posted no receive
  must(a.qp.post_send(s), "post");
  ibv_wc wc = wait_wc(a.scq, WaitMode::busy, 10s);
  EXPECT_EQ(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
  auto st = check_completion(wc);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("IBV_WC_RNR_RETRY_EXC_ERR"), std::string::npos) << st.error().message;
}

TEST(ErrorCompletions, RnrRetriesWaitForALateReceive) {
  auto pd = must(ProtectionDomain::create(device()), "pd");
  Side a = make_side(pd), b = make_side(pd);
  connect_pair(a, b);  // rnr_retry 7: retry for ever
  auto s = SendWr::send(a.mr.local(0, 32), 5);
  must(a.qp.post_send(s), "post");
  std::this_thread::sleep_for(30ms);
  auto r = RecvWr::into(b.mr.local(0, 64), 1);
  must(b.qp.post_recv(r), "late recv");
  EXPECT_EQ(wait_ok(a.scq, WaitMode::busy).wr_id, 5u);
  EXPECT_EQ(wait_ok(b.rcq).byte_len, 32u);
}

TEST(ErrorCompletions, SendLongerThanTheReceiveFails) {
  auto pd = must(ProtectionDomain::create(device()), "pd");
  Side a = make_side(pd), b = make_side(pd);
  connect_pair(a, b);
  auto r = RecvWr::into(b.mr.local(0, 16), 1);
  must(b.qp.post_recv(r), "recv");
  auto s = SendWr::send(a.mr.local(0, 64), 2);
  must(a.qp.post_send(s), "send");
  // The spec says IBV_WC_LOC_LEN_ERR at the receiver; rxe reports IBV_WC_LOC_QP_OP_ERR.
  ibv_wc wc = wait_wc(b.rcq);
  EXPECT_TRUE(wc.status == IBV_WC_LOC_LEN_ERR || wc.status == IBV_WC_LOC_QP_OP_ERR)
      << wc_status_name(wc.status);
  ibv_wc sent = wait_wc(a.scq);
  EXPECT_NE(sent.status, IBV_WC_SUCCESS);
  EXPECT_FALSE(check_completion(sent));
}

TEST(PostErrors, OverflowingTheSendQueueNamesTheVerb) {
  auto pd = must(ProtectionDomain::create(device()), "pd");
  QpOptions o;
  o.max_send_wr = 4;
  Side a = make_side(pd, o), b = make_side(pd);
  // In RESET the QP refuses sends outright.
  auto s = SendWr::send(a.mr.local(0, 8), 1);
  auto e = a.qp.post_send(s);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("ibv_post_send"), std::string::npos) << e.error().message;
  EXPECT_NE(e.error().message.find("errno"), std::string::npos);
}
