#include "msg/test_pattern.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace weft::msg;

TEST(TestPattern, LengthsSpanTheRangeAndRepeat) {
  const uint32_t max = 65536;
  uint32_t small = 0, large = 0;
  for (uint64_t i = 0; i < 10000; ++i) {
    const uint32_t n = pattern_length(1, i, max);
    ASSERT_LE(n, max);
    EXPECT_EQ(n, pattern_length(1, i, max));
    small += n < 64;
    large += n > max / 2;
  }
  EXPECT_GT(small, 1000u);
  EXPECT_GT(large, 200u);
  EXPECT_LE(pattern_length(1, 5, 1), 1u);
}

TEST(TestPattern, EveryByteIsChecked) {
  for (size_t len : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{13}, size_t{4096}}) {
    std::vector<std::byte> m(len);
    pattern_fill(42, 9, m);
    EXPECT_EQ(pattern_mismatch(42, 9, m), SIZE_MAX) << len;
    if (len == 0) continue;
    if (len >= 8) {
      EXPECT_NE(pattern_mismatch(42, 10, m), SIZE_MAX) << "another message bytes pass for this one";
    }
    for (size_t at : {size_t{0}, len / 2, len - 1}) {
      auto bad = m;
      bad[at] ^= std::byte{1};
      EXPECT_EQ(pattern_mismatch(42, 9, bad), at) << len;
    }
  }
}
