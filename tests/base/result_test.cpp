#include "base/result.hpp"

#include <gtest/gtest.h>

namespace {

weft::Result<int> parse_positive(int v) {
  if (v <= 0) return weft::fail("value {} is not positive", v);
  return v;
}

TEST(Result, CarriesValueOrMessage) {
  auto ok = parse_positive(3);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(*ok, 3);
  auto bad = parse_positive(-1);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message, "value -1 is not positive");
}

TEST(Result, ErrnoMessageNamesTheCallAndTheReason) {
  auto e = weft::fail_errno("bind 127.0.0.1:1", EADDRINUSE);
  EXPECT_EQ(e.error().code, EADDRINUSE);
  EXPECT_NE(e.error().message.find("bind 127.0.0.1:1: "), std::string::npos);
  EXPECT_NE(e.error().message.find("in use"), std::string::npos);
}

}  // namespace
