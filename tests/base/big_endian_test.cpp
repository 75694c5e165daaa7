#include "base/big_endian.hpp"

#include <gtest/gtest.h>

#include <array>

namespace {

using weft::be::load;
using weft::be::store;

TEST(BigEndian, StoresMostSignificantByteFirst) {
  std::array<uint8_t, 9> b{};
  store<uint16_t>(b.data() + 1, 0x0102);
  EXPECT_EQ((std::array<uint8_t, 3>{0, 1, 2}), (std::array<uint8_t, 3>{b[0], b[1], b[2]}));
  store<uint32_t>(b.data() + 1, 0x01020304u);  // unaligned on purpose
  EXPECT_EQ(b[1], 1);
  EXPECT_EQ(b[4], 4);
  store<uint64_t>(b.data() + 1, 0x0102030405060708ull);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(b[static_cast<size_t>(i + 1)], i + 1);
  EXPECT_EQ(b[0], 0);  // nothing written before the start
}

TEST(BigEndian, LoadsWhatWasStoredAtAnyOffset) {
  std::array<uint8_t, 16> b{};
  for (size_t off = 0; off < 8; ++off) {
    store<uint64_t>(b.data() + off, 0xF1E2D3C4B5A69788ull);
    EXPECT_EQ(load<uint64_t>(b.data() + off), 0xF1E2D3C4B5A69788ull);
    EXPECT_EQ(load<uint32_t>(b.data() + off), 0xF1E2D3C4u);
    EXPECT_EQ(load<uint16_t>(b.data() + off), 0xF1E2u);
    EXPECT_EQ(load<uint8_t>(b.data() + off), 0xF1u);
  }
}

// The byte loop used in constant evaluation agrees with the run-time path.
constexpr uint64_t constexpr_round_trip() {
  std::array<uint8_t, 8> b{};
  store<uint64_t>(b.data(), 0x0102030405060708ull);
  return (static_cast<uint64_t>(b[0]) << 56) | load<uint64_t>(b.data()) >> 8;
}
static_assert(constexpr_round_trip() == ((1ull << 56) | 0x01020304050607ull));

TEST(BigEndian, ConstantEvaluationMatchesRunTime) {
  std::array<uint8_t, 8> b{};
  store<uint64_t>(b.data(), 0x0102030405060708ull);
  EXPECT_EQ((static_cast<uint64_t>(b[0]) << 56) | load<uint64_t>(b.data()) >> 8, constexpr_round_trip());
}

}  // namespace
