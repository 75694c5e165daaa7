#include "base/parse_integer.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace weft {
namespace {

TEST(ParseInteger, TheWholeTextIsTheNumber) {
  EXPECT_EQ(parse_integer<uint64_t>("0"), 0u);
  EXPECT_EQ(parse_integer<uint64_t>("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(parse_integer<int64_t>("-42"), -42);
  EXPECT_EQ(parse_integer<size_t>("100000"), 100000u);
}

TEST(ParseInteger, AnythingElseIsRefused) {
  for (const char* bad : {"", "12abc", " 1", "1 ", "+1", "-1", "1.5", "0x10", "18446744073709551616", "abc"})
    EXPECT_FALSE(parse_integer<uint64_t>(bad).has_value()) << bad;
  EXPECT_FALSE(parse_integer<int8_t>("128").has_value());
  EXPECT_FALSE(parse_integer<int64_t>("--1").has_value());
}

}  // namespace
}  // namespace weft
