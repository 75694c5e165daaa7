// Protocol and timestamp-source names: every value round-trips through its name; others are errors.
#include "proto/protocol.hpp"

#include <gtest/gtest.h>

using namespace weft::proto;

TEST(ProtocolNames, RoundTrip) {
  for (auto p : {Protocol::udp, Protocol::tcp, Protocol::rdma}) {
    auto back = parse_protocol(to_string(p));
    ASSERT_TRUE(back) << to_string(p);
    EXPECT_EQ(*back, p);
  }
  for (auto s : {TimestampSource::hardware, TimestampSource::kernel, TimestampSource::user}) {
    auto back = parse_timestamp_source(to_string(s));
    ASSERT_TRUE(back) << to_string(s);
    EXPECT_EQ(*back, s);
  }
}

TEST(ProtocolNames, UnknownNamesAreErrors) {
  EXPECT_EQ(parse_protocol("UDP").error().message, "unknown protocol 'UDP' (expected udp, tcp or rdma)");
  EXPECT_FALSE(parse_protocol(""));
  EXPECT_FALSE(parse_protocol("udp "));
  EXPECT_EQ(parse_timestamp_source("nic").error().message,
            "unknown timestamp source 'nic' (expected hardware, kernel or user)");
  EXPECT_STREQ(to_string(static_cast<Protocol>(9)), "unknown");
}
