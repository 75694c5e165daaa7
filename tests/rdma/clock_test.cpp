#include "rdma/clock.hpp"

#include <gtest/gtest.h>

#include <cstdint>

using weft::rdma::NicClock;
using weft::rdma::TickUnwrapper;

namespace {
constexpr uint64_t kMask48 = (uint64_t{1} << 48) - 1;
constexpr uint64_t kMask64 = ~uint64_t{0};
}  // namespace

TEST(NicClock, ValidOnlyWithClockAndAllOnesMask) {
  EXPECT_TRUE(NicClock(156250, kMask48).valid());
  EXPECT_TRUE(NicClock(1, kMask64).valid());
  EXPECT_FALSE(NicClock(0, kMask48).valid());      // rxe: no clock
  EXPECT_FALSE(NicClock(156250, 0).valid());       // no timestamp counter
  EXPECT_FALSE(NicClock(156250, 0x1000).valid());  // not 2^k-1
}

TEST(NicClock, TicksToNanoseconds) {
  // 156.25 MHz (ConnectX-4 class): one tick is 6.4 ns.
  NicClock c(156250, kMask48);
  EXPECT_EQ(c.to_ns(0), 0u);
  EXPECT_EQ(c.to_ns(5), 32u);
  EXPECT_EQ(c.to_ns(156250), 1'000'000u);           // one ms
  EXPECT_EQ(c.to_ns(156'250'000), 1'000'000'000u);  // one s
  // 1 GHz: ticks are ns.
  NicClock g(1'000'000, kMask64);
  EXPECT_EQ(g.to_ns(123456789), 123456789u);
  // 3 tick at 1 kHz is 3 ms.
  EXPECT_EQ(NicClock(1, kMask64).to_ns(3), 3'000'000u);
}

TEST(NicClock, NoOverflowForHugeTickCounts) {
  // ticks * 1e6 would overflow 64 bits; the split form must not.
  NicClock c(1'000'000, kMask64);
  EXPECT_EQ(c.to_ns(kMask64), kMask64);
  NicClock d(156250, kMask64);
  const uint64_t ticks = uint64_t{1} << 60;
  const unsigned __int128 exact = static_cast<unsigned __int128>(ticks) * 1'000'000 / 156250;
  EXPECT_EQ(d.to_ns(ticks), static_cast<uint64_t>(exact));
}

TEST(NicClock, DeltaAcrossWrapOf48BitCounter) {
  NicClock c(1'000'000, kMask48);
  const uint64_t before = kMask48 - 99;  // 100 ticks before the wrap
  const uint64_t after = 150;            // 150 ticks after it
  EXPECT_EQ(c.delta_ticks(before, after), 250u);
  EXPECT_EQ(c.delta_ns(before, after), 250u);
  EXPECT_EQ(c.delta_ticks(10, 10), 0u);
  EXPECT_EQ(c.delta_ticks(10, 25), 15u);
}

TEST(NicClock, DeltaAcrossWrapOf64BitCounter) {
  NicClock c(500'000, kMask64);  // 500 MHz: 2 ns a tick
  EXPECT_EQ(c.delta_ticks(kMask64 - 4, 5), 10u);
  EXPECT_EQ(c.delta_ns(kMask64 - 4, 5), 20u);
}

TEST(NicClock, DeltaIgnoresBitsAboveTheMask) {
  // Some drivers hand out the counter with garbage above its width; the mask removes it.
  NicClock c(1'000'000, kMask48);
  EXPECT_EQ(c.delta_ticks(uint64_t{0xABCD} << 48 | 100, 300), 200u);
}

TEST(TickUnwrapper, ExtendsAcrossSeveralWraps) {
  TickUnwrapper u(0xFF);  // an 8-bit counter wraps every 256 ticks
  EXPECT_EQ(u.extend(250), 250u);
  EXPECT_EQ(u.extend(5), 261u);  // wrapped once
  EXPECT_EQ(u.extend(200), 456u);
  EXPECT_EQ(u.extend(10), 522u);  // wrapped twice
  EXPECT_EQ(u.extend(10), 522u);  // no progress
}

TEST(TickUnwrapper, FullWidthCounterIsIdentity) {
  TickUnwrapper u(kMask64);
  EXPECT_EQ(u.extend(42), 42u);
  EXPECT_EQ(u.extend(1000), 1000u);
}
