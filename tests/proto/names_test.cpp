// The name rules, one table for all of them (proto/names.hpp).
#include "proto/names.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace weft::proto;

TEST(Names, HostNames) {
  for (const char* ok : {"h1", "rack-1.db_2", "h1:mlx5_1", "10.0.0.1:7777", "[::1]:7777", "A"})
    EXPECT_TRUE(valid_host_name(ok)) << ok;
  for (const char* bad : {"", "h 1", "h/1", "h*", "h?", "h\n", "é"})
    EXPECT_FALSE(valid_host_name(bad)) << bad;
  EXPECT_FALSE(valid_host_name(std::string_view("h\0x", 3)));
  EXPECT_TRUE(valid_host_name(std::string(kMaxNameLength, 'h')));
  EXPECT_FALSE(valid_host_name(std::string(kMaxNameLength + 1, 'h')));
}

TEST(Names, PatternsPlainAndDeviceNames) {
  EXPECT_TRUE(valid_host_pattern("rack1-*"));
  EXPECT_TRUE(valid_host_pattern("h?"));
  EXPECT_FALSE(valid_host_pattern("h1:7777"));  // a pattern matches agent names, not addresses
  EXPECT_FALSE(valid_host_pattern("[ab]"));
  EXPECT_FALSE(valid_host_pattern(""));
  EXPECT_TRUE(valid_plain_name("mesh-1.a_b"));
  EXPECT_FALSE(valid_plain_name("mesh*"));
  EXPECT_FALSE(valid_plain_name("a:b"));
  EXPECT_TRUE(valid_device_name("mlx5_0"));
  EXPECT_FALSE(valid_device_name("rxe 0"));
  EXPECT_FALSE(valid_device_name("rxe:0"));
  EXPECT_TRUE(valid_device_name(std::string(kMaxDeviceNameLength, 'x')));
  EXPECT_FALSE(valid_device_name(std::string(kMaxDeviceNameLength + 1, 'x')));
  // Every byte above 127 is refused by every rule (no locale involved).
  for (int c = 128; c < 256; ++c) {
    std::string s(1, static_cast<char>(c));
    EXPECT_FALSE(valid_host_name(s) || valid_host_pattern(s) || valid_plain_name(s) || valid_device_name(s))
        << c;
  }
}
