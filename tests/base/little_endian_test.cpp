#include "base/little_endian.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>

namespace {

using weft::le::load;
using weft::le::store;

TEST(LittleEndian, StoresLeastSignificantByteFirst) {
  std::array<uint8_t, 10> b{};
  store<uint16_t>(b.data() + 1, 0x0102);
  EXPECT_EQ((std::array<uint8_t, 4>{0, 2, 1, 0}), (std::array<uint8_t, 4>{b[0], b[1], b[2], b[3]}));
  store<uint32_t>(b.data() + 1, 0x01020304u);  // unaligned on purpose
  EXPECT_EQ(b[1], 4);
  EXPECT_EQ(b[4], 1);
  store<uint64_t>(b.data() + 1, 0x0807060504030201ull);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(b[static_cast<size_t>(i + 1)], i + 1);
  EXPECT_EQ(b[0], 0);  // nothing written before the start or after the end
  EXPECT_EQ(b[9], 0);
}

TEST(LittleEndian, LoadsWhatWasStoredAtAnyOffset) {
  std::array<uint8_t, 16> b{};
  for (size_t off = 0; off < 8; ++off) {
    store<uint64_t>(b.data() + off, 0xF1E2D3C4B5A69788ull);
    EXPECT_EQ(load<uint64_t>(b.data() + off), 0xF1E2D3C4B5A69788ull);
    EXPECT_EQ(load<uint32_t>(b.data() + off), 0xB5A69788u);
    EXPECT_EQ(load<uint16_t>(b.data() + off), 0x9788u);
    EXPECT_EQ(load<uint8_t>(b.data() + off), 0x88u);
  }
}

TEST(LittleEndian, ByteBuffersAgreeWithUint8Buffers) {
  std::array<std::byte, 8> w{};
  store<uint32_t>(w.data() + 2, 0x44524657u);  // "WFRD"
  EXPECT_EQ(w[2], std::byte{'W'});
  EXPECT_EQ(w[5], std::byte{'D'});
  EXPECT_EQ(load<uint32_t>(w.data() + 2), 0x44524657u);
  EXPECT_EQ(load<uint16_t>(w.data() + 4), 0x4452u);
}

constexpr uint32_t constexpr_round_trip() {
  std::array<uint8_t, 4> b{};
  store<uint32_t>(b.data(), 0x01020304u);
  return b[0] == 4 ? load<uint32_t>(b.data()) : 0;
}
static_assert(constexpr_round_trip() == 0x01020304u);

}  // namespace
