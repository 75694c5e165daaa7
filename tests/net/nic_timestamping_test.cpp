// Switching NIC hardware timestamps on: every failure is a clear error naming the interface and
// changes nothing. (No NIC here has hardware timestamps; loopback and veth are software devices.)
#include "net/nic_timestamping.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

using weft::net::enable_nic_timestamping;

TEST(NicTimestamping, UnknownInterfaceIsNamed) {
  auto r = enable_nic_timestamping("weftnosuch0");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "weftnosuch0: no such network interface");
}

TEST(NicTimestamping, BadNamesAreRefusedBeforeAnySystemCall) {
  auto empty = enable_nic_timestamping("");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("not a network interface name"), std::string::npos);
  auto too_long = enable_nic_timestamping(std::string(40, 'x'));
  ASSERT_FALSE(too_long);
  EXPECT_NE(too_long.error().message.find("not a network interface name"), std::string::npos);
}

TEST(NicTimestamping, LoopbackHasNoHardwareStamps) {
  auto r = enable_nic_timestamping("lo");
  ASSERT_FALSE(r);
  // As root the driver's answer; otherwise the missing capability. Both name the interface.
  const std::string want = geteuid() == 0 ? "lo: the driver has no hardware timestamps" : "lo: switching";
  EXPECT_EQ(r.error().message.rfind(want, 0), 0u) << r.error().message;
}
