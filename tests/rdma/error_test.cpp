#include "rdma/error.hpp"

#include <gtest/gtest.h>

using namespace weft::rdma;

TEST(RdmaError, VerbErrorNamesVerbAndErrno) {
  auto e = verb_error("ibv_reg_mr 4096 bytes", ENOMEM);
  EXPECT_EQ(e.error().code, ENOMEM);
  EXPECT_NE(e.error().message.find("ibv_reg_mr 4096 bytes"), std::string::npos);
  EXPECT_NE(e.error().message.find("errno 12"), std::string::npos) << e.error().message;
}

TEST(RdmaError, NoDeviceHasOnePrefix) {
  auto e = no_device("ibv_get_device_list: nothing", ENOSYS);
  EXPECT_TRUE(e.error().message.starts_with("no RDMA device: "));
  EXPECT_TRUE(is_no_device(e.error()));
  EXPECT_EQ(e.error().code, ENOSYS);
  EXPECT_EQ(no_device("x").error().code, ENODEV);
  EXPECT_FALSE(is_no_device(verb_error("ibv_open_device", ENODEV).error()));
}

TEST(RdmaError, CompletionStatusNames) {
  EXPECT_EQ(wc_status_name(IBV_WC_REM_ACCESS_ERR), "IBV_WC_REM_ACCESS_ERR");
  EXPECT_EQ(wc_status_name(IBV_WC_RNR_RETRY_EXC_ERR), "IBV_WC_RNR_RETRY_EXC_ERR");
  EXPECT_EQ(wc_status_name(IBV_WC_WR_FLUSH_ERR), "IBV_WC_WR_FLUSH_ERR");
  EXPECT_EQ(wc_status_name(static_cast<ibv_wc_status>(999)), "IBV_WC_STATUS_UNKNOWN");
  EXPECT_EQ(wc_opcode_name(IBV_WC_RDMA_WRITE), "RDMA_WRITE");
  EXPECT_EQ(wc_opcode_name(IBV_WC_RECV_RDMA_WITH_IMM), "RECV_RDMA_WITH_IMM");
}

TEST(RdmaError, CheckCompletion) {
  ibv_wc ok{};
  ok.status = IBV_WC_SUCCESS;
  EXPECT_TRUE(check_completion(ok));
  ibv_wc bad{};
  bad.status = IBV_WC_REM_ACCESS_ERR;
  bad.wr_id = 77;
  bad.qp_num = 0x11;
  auto s = check_completion(bad);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("IBV_WC_REM_ACCESS_ERR"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("wr_id 77"), std::string::npos);
  EXPECT_NE(s.error().message.find("qp 0x11"), std::string::npos);
  EXPECT_EQ(s.error().code, IBV_WC_REM_ACCESS_ERR);
}
