// The path every machine without RDMA takes: one clear error, never a crash. On a host with a
// device (inside the lab guest) there is nothing to check here.
#include <gtest/gtest.h>

#include "rdma/cm_connection.hpp"
#include "rdma/completion_queue.hpp"
#include "rdma/device.hpp"
#include "rdma/error.hpp"

using namespace weft::rdma;
using namespace std::chrono_literals;

namespace {
bool have_device() { return Device::list().has_value(); }
}  // namespace

TEST(NoDevice, ListAndOpenSayNoRdmaDevice) {
  if (have_device()) GTEST_SKIP() << "this machine has an RDMA device";
  auto l = Device::list();
  ASSERT_FALSE(l);
  EXPECT_TRUE(l.error().message.starts_with("no RDMA device: ")) << l.error().message;
  EXPECT_NE(l.error().code, 0);
  auto d = Device::open();
  ASSERT_FALSE(d);
  EXPECT_TRUE(d.error().message.starts_with("no RDMA device: ")) << d.error().message;
  auto named = Device::open("mlx5_0");
  ASSERT_FALSE(named);
  EXPECT_TRUE(is_no_device(named.error()));
  // Exactly one clear error: the prefix once, no second wrapping.
  EXPECT_EQ(d.error().message.find("no RDMA device", 1), std::string::npos) << d.error().message;
}

TEST(NoDevice, RdmaCmSaysNoRdmaDevice) {
  if (have_device()) GTEST_SKIP() << "this machine has an RDMA device";
  auto l = CmListener::listen("127.0.0.1", 0);
  ASSERT_FALSE(l);
  EXPECT_TRUE(is_no_device(l.error())) << l.error().message;
  CmOptions o;
  o.timeout = 200ms;
  auto c = CmConnection::connect("127.0.0.1", 1, {}, o);
  ASSERT_FALSE(c);
  EXPECT_TRUE(is_no_device(c.error())) << c.error().message;
}
