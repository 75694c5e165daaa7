// The adaptive wake-up period: where it settles for a given packet rate, and its bounds.
#include "probe/wake_coalescer.hpp"

#include <gtest/gtest.h>

using weft::probe::WakeCoalescer;

namespace {
constexpr int64_t kMs = 1'000'000;

// Feeds `rounds` wake-ups of a loop that sees `per_s` datagrams a second, evenly.
int64_t settle(WakeCoalescer& c, double per_s, int rounds = 200) {
  for (int i = 0; i < rounds; ++i)
    c.observe(static_cast<size_t>(per_s * static_cast<double>(c.period_ns()) / 1e9));
  return c.period_ns();
}
}  // namespace

TEST(WakeCoalescer, StartsAtTheShortestPeriod) {
  WakeCoalescer c(1 * kMs, 5 * kMs);
  EXPECT_EQ(c.period_ns(), 1 * kMs);
}

TEST(WakeCoalescer, AStreamGrowsToTheLongest) {
  WakeCoalescer c(1 * kMs, 5 * kMs);
  EXPECT_EQ(settle(c, 20'000), 5 * kMs);  // 10,000 probes/s: 100 datagrams a wake-up at 5 ms
}

TEST(WakeCoalescer, LightLoadAndIdleStayAtTheShortest) {
  // Few datagrams a wake-up: batching would save little and only delay answers.
  WakeCoalescer light(1 * kMs, 5 * kMs);
  EXPECT_EQ(settle(light, 1'000), 1 * kMs);
  WakeCoalescer idle(1 * kMs, 5 * kMs);
  EXPECT_EQ(settle(idle, 0), 1 * kMs);
  // A stream that stops: back to the shortest.
  WakeCoalescer c(1 * kMs, 5 * kMs);
  ASSERT_EQ(settle(c, 20'000), 5 * kMs);
  EXPECT_EQ(settle(c, 0, 10), 1 * kMs);
}

TEST(WakeCoalescer, HeavyLoadKeepsEachWakeUpWithinBounds) {
  WakeCoalescer c(1 * kMs, 5 * kMs);
  const int64_t p = settle(c, 200'000);  // 100,000 probes/s
  const double per_wake = 200'000.0 * static_cast<double>(p) / 1e9;
  EXPECT_LE(per_wake, static_cast<double>(WakeCoalescer::kMany));
  EXPECT_GE(p, 1 * kMs);
  EXPECT_LT(p, 5 * kMs);
}

TEST(WakeCoalescer, ABurstHalvesThePeriodAtOnce) {
  WakeCoalescer c(1 * kMs, 8 * kMs);
  settle(c, 10'000);  // 80 datagrams a wake-up at 8 ms
  ASSERT_EQ(c.period_ns(), 8 * kMs);
  c.observe(WakeCoalescer::kMany + 1);
  EXPECT_EQ(c.period_ns(), 4 * kMs);
  for (int i = 0; i < 10; ++i) c.observe(100'000);
  EXPECT_EQ(c.period_ns(), 1 * kMs);  // never below the shortest
}

TEST(WakeCoalescer, ZeroMeansReactAtOnce) {
  WakeCoalescer c(0, 0);
  settle(c, 0);
  EXPECT_EQ(c.period_ns(), 0);
  WakeCoalescer inverted(3 * kMs, 1 * kMs);  // a max below the min is the min
  settle(inverted, 100'000);
  EXPECT_EQ(inverted.period_ns(), 3 * kMs);
}
