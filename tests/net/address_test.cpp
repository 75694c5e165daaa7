#include "net/address.hpp"

#include <gtest/gtest.h>

using weft::net::SocketAddress;
using weft::net::split_host_port;

TEST(Address, ParsesIPv4AndIPv6Literals) {
  auto a = SocketAddress::parse_ip("10.1.2.3", 7777);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->family(), AF_INET);
  EXPECT_EQ(a->port(), 7777);
  EXPECT_EQ(a->to_string(), "10.1.2.3:7777");
  auto b = SocketAddress::parse_ip("fd00::1", 80);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->family(), AF_INET6);
  EXPECT_EQ(b->to_string(), "[fd00::1]:80");
  EXPECT_FALSE(SocketAddress::parse_ip("10.1.2", 1));
  EXPECT_FALSE(SocketAddress::parse_ip("host.example", 1));
  EXPECT_FALSE(SocketAddress::parse_ip("", 1));
  EXPECT_FALSE(SocketAddress::parse_ip("fe80::1%nosuchif0", 1));
}

TEST(Address, SplitsHostAndPort) {
  auto p = split_host_port("10.0.0.1:99", 7);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->first, "10.0.0.1");
  EXPECT_EQ(p->second, 99);
  p = split_host_port("10.0.0.1", 7);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->second, 7);
  p = split_host_port("[::1]:8", 7);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->first, "::1");
  EXPECT_EQ(p->second, 8);
  p = split_host_port("::1", 7);  // a bare IPv6 literal is all host
  ASSERT_TRUE(p);
  EXPECT_EQ(p->first, "::1");
  EXPECT_EQ(p->second, 7);
  EXPECT_FALSE(split_host_port("1.2.3.4:0", 7));
  EXPECT_FALSE(split_host_port("1.2.3.4:65536", 7));
  EXPECT_FALSE(split_host_port("1.2.3.4:", 7));
  EXPECT_FALSE(split_host_port("1.2.3.4:x", 7));
  EXPECT_FALSE(split_host_port("[::1", 7));
  EXPECT_FALSE(split_host_port("[::1]x", 7));
  EXPECT_FALSE(split_host_port("", 7));
  EXPECT_FALSE(split_host_port(":80", 7));
}

TEST(Address, SplitAllowsPortZeroOnlyWhenAsked) {
  auto p = split_host_port("127.0.0.1:0", 7, /*allow_port_zero=*/true);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->first, "127.0.0.1");
  EXPECT_EQ(p->second, 0);
  p = split_host_port("[::1]:0", 7, true);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->first, "::1");
  EXPECT_EQ(p->second, 0);
  EXPECT_FALSE(split_host_port("127.0.0.1:0", 7));
  EXPECT_FALSE(split_host_port("127.0.0.1:65536", 7, true));
  EXPECT_FALSE(split_host_port("127.0.0.1:-1", 7, true));
}

TEST(Address, SameEndpointTreatsMappedIPv4AsIPv4) {
  auto v4 = SocketAddress::parse_ip("127.0.0.1", 5);
  auto mapped = SocketAddress::parse_ip("::ffff:127.0.0.1", 5);
  auto other = SocketAddress::parse_ip("127.0.0.2", 5);
  auto other_port = SocketAddress::parse_ip("127.0.0.1", 6);
  EXPECT_TRUE(v4->same_endpoint(*mapped));
  EXPECT_TRUE(mapped->same_endpoint(*v4));
  EXPECT_FALSE(v4->same_endpoint(*other));
  EXPECT_FALSE(v4->same_endpoint(*other_port));
  EXPECT_TRUE(SocketAddress::parse_ip("0.0.0.0", 0)->is_unspecified());
  EXPECT_TRUE(SocketAddress::parse_ip("::", 0)->is_unspecified());
}
