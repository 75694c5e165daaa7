// The checksum against RFC 1071's worked example, a known IPv4 header, and a plain 16-bit-word
// reference over random buffers of every length (the fast path sums 32 bits at a time).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "stack/wire/checksum.hpp"

using namespace weft::stack::wire;

namespace {
uint16_t reference(const std::vector<uint8_t>& b) {
  uint32_t s = 0;
  for (size_t i = 0; i < b.size(); i += 2) s += (uint32_t{b[i]} << 8) | (i + 1 < b.size() ? b[i + 1] : 0);
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(~s);
}
}  // namespace

TEST(WireChecksum, Rfc1071Example) {
  const std::vector<uint8_t> b{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  EXPECT_EQ(csum_fold(csum_add(0, b)), 0xddf2);
  EXPECT_EQ(csum_finish(csum_add(0, b)), 0x220d);
}

TEST(WireChecksum, KnownIpv4Header) {
  // 192.168.0.1 -> 192.168.0.199, UDP, checksum 0xb861 (a widely quoted example).
  std::vector<uint8_t> h{0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                         0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
  EXPECT_EQ(csum_finish(csum_add(0, h)), 0xb861);
  h[10] = 0xb8;
  h[11] = 0x61;
  EXPECT_EQ(csum_fold(csum_add(0, h)), 0xffff);  // a correct header sums to all ones
}

TEST(WireChecksum, MatchesWordByWordReferenceAtEveryLength) {
  std::mt19937 rng(7);
  for (size_t n = 0; n < 300; ++n) {
    std::vector<uint8_t> b(n);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    ASSERT_EQ(csum_finish(csum_add(0, b)), reference(b)) << "length " << n;
  }
  std::vector<uint8_t> ones(65536, 0xff);  // the largest carries
  EXPECT_EQ(csum_finish(csum_add(0, ones)), reference(ones));
}

TEST(WireChecksum, SummedInEvenPiecesEqualsWhole) {
  std::vector<uint8_t> b(1001);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 31);
  const Bytes all(b);
  const uint64_t pieces =
      csum_add(csum_add(csum_add(0, all.first(6)), all.subspan(6, 500)), all.subspan(506));
  EXPECT_EQ(csum_finish(pieces), csum_finish(csum_add(0, all)));
}

// The copy-and-sum the transmit path uses: the same bytes land in the destination and the sum
// equals csum_add's over the source, at every length and source alignment, also when added to
// a non-zero accumulator (the pseudo-header) and on all-ones data (the largest carries).
TEST(WireChecksum, CopyAndSumEqualsCopyThenSum) {
  std::mt19937 rng(11);
  std::vector<uint8_t> src(1600 + 8), dst(1600 + 8);
  for (auto& x : src) x = static_cast<uint8_t>(rng());
  for (size_t off = 0; off < 8; ++off) {
    for (size_t n = 0; n <= 1600; n += (n < 80 ? 1 : 37)) {
      std::fill(dst.begin(), dst.end(), 0xa5);
      const Bytes in(src.data() + off, n);
      const uint64_t acc = 0x12345 + n;
      const uint64_t got = csum_copy(dst.data() + 1, in, acc);
      ASSERT_EQ(csum_fold(got), csum_fold(csum_add(acc, in))) << "length " << n << " offset " << off;
      ASSERT_TRUE(std::equal(in.begin(), in.end(), dst.begin() + 1)) << "length " << n;
      ASSERT_EQ(dst[0], 0xa5);
      ASSERT_EQ(dst[1 + n], 0xa5) << "wrote past the end at length " << n;
    }
  }
  std::vector<uint8_t> ones(65536, 0xff), out(65536);
  EXPECT_EQ(csum_finish(csum_copy(out.data(), ones, 0)), reference(ones));
}
