// The adaptive wake-up period: where it settles for a given packet rate, and its bounds.
#include "probe/ip/wake_coalescer.hpp"

#include <gtest/gtest.h>

#include <chrono>

#include "probe/ip/coalesce_defaults.hpp"

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

TEST(WakeCoalescer, StartsAtTheLongestPeriod) {
  WakeCoalescer c(1 * kMs, 5 * kMs);
  EXPECT_EQ(c.period_ns(), 5 * kMs);
  EXPECT_FALSE(c.streaming());
}

TEST(WakeCoalescer, AStreamStaysAtTheLongest) {
  WakeCoalescer c(1 * kMs, 5 * kMs);
  EXPECT_EQ(settle(c, 20'000), 5 * kMs);  // 10,000 probes/s: 100 datagrams a wake-up at 5 ms
  EXPECT_TRUE(c.streaming());
}

TEST(WakeCoalescer, LightLoadAndIdleStayAtTheLongest) {
  // Issue 17: at 1,000 probes/s (~3,000 datagrams/s on each side) a 1 ms period woke each side
  // ~1,000 times a second for a few datagrams: the period stays at 5 ms, as the floor's does.
  WakeCoalescer light(1 * kMs, 5 * kMs);
  EXPECT_EQ(settle(light, 3'000), 5 * kMs);
  EXPECT_TRUE(light.streaming());  // 15 datagrams a wake-up
  WakeCoalescer idle(1 * kMs, 5 * kMs);
  EXPECT_EQ(settle(idle, 0), 5 * kMs);
  EXPECT_FALSE(idle.streaming());  // nothing flows: wait in epoll, react to the first packet
  // A heavy stream that stops: back to the longest, and no longer streaming.
  WakeCoalescer c(1 * kMs, 5 * kMs);
  ASSERT_LT(settle(c, 400'000), 5 * kMs);
  EXPECT_EQ(settle(c, 0, 20), 5 * kMs);
  EXPECT_FALSE(c.streaming());
}

TEST(WakeCoalescer, AFewDatagramsAreNotAStream) {
  WakeCoalescer c(1 * kMs, 5 * kMs);
  c.observe(WakeCoalescer::kBusy - 1);
  EXPECT_FALSE(c.streaming());
  c.observe(WakeCoalescer::kBusy);
  EXPECT_TRUE(c.streaming());
}

// Hysteresis (issue 17): a stream that dips below kBusy stays a stream; only kQuietWakeups
// wake-ups in a row with fewer than kQuiet datagrams end it.
TEST(WakeCoalescer, AStreamThatDipsStaysAStream) {
  WakeCoalescer c(1 * kMs, 5 * kMs);
  c.observe(WakeCoalescer::kBusy);
  ASSERT_TRUE(c.streaming());
  int flips = 0;
  bool was = true;
  for (size_t i = 0; i < 1'000; ++i) {  // 1,000 probes/s over 100 targets: 3..12 datagrams a wake-up
    c.observe(3 + (i * 7) % 10);
    flips += c.streaming() != was;
    was = c.streaming();
  }
  EXPECT_EQ(flips, 0);
  EXPECT_TRUE(c.streaming());
  // Quiet wake-ups that are not consecutive do not end it...
  for (int i = 0; i < 10; ++i) {
    c.observe(WakeCoalescer::kQuiet - 1);
    c.observe(WakeCoalescer::kQuiet);
  }
  EXPECT_TRUE(c.streaming());
  // ...kQuietWakeups in a row do.
  for (int i = 0; i + 1 < WakeCoalescer::kQuietWakeups; ++i) {
    c.observe(0);
    EXPECT_TRUE(c.streaming()) << i;
  }
  c.observe(0);
  EXPECT_FALSE(c.streaming());
  // And below kBusy nothing starts one.
  c.observe(WakeCoalescer::kBusy - 1);
  EXPECT_FALSE(c.streaming());
}

TEST(WakeCoalescer, HeavyLoadKeepsEachWakeUpWithinBounds) {
  WakeCoalescer c(1 * kMs, 5 * kMs);
  // 100,000 probes/s: 200,000 datagrams/s would be 1,000 a wake-up at 5 ms.
  settle(c, 200'000);
  for (int i = 0; i < 20; ++i) {  // it oscillates below and about kMany, never far above
    c.observe(static_cast<size_t>(200'000.0 * static_cast<double>(c.period_ns()) / 1e9));
    const double per_wake = 200'000.0 * static_cast<double>(c.period_ns()) / 1e9;
    EXPECT_LE(per_wake, 2.0 * WakeCoalescer::kMany);
    EXPECT_GE(c.period_ns(), 1 * kMs);
    EXPECT_LT(c.period_ns(), 5 * kMs);
  }
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

// The responder's hold bound (docs/probe.md "RTT fields"): whatever the load does to the period,
// the loop never plans its next look at the sockets later than max_coalesce after a wake-up, and
// the defaults every config starts from are the documented 1 and 5 ms.
TEST(CoalescingWait, NeverPlansAWakeUpLaterThanMaxCoalesceAfterTheLast) {
  EXPECT_EQ(weft::probe::kDefaultCoalesce, std::chrono::milliseconds(1));
  EXPECT_EQ(weft::probe::kDefaultMaxCoalesce, std::chrono::milliseconds(5));
  constexpr int64_t kMax = 2 * kMs;
  auto ep = weft::net::Epoll::create();
  auto ev = weft::EventFd::create();
  ASSERT_TRUE(ep && ev);
  ASSERT_TRUE(ep->add(ev->fd(), EPOLLIN, 1));
  ev->signal();  // always readable: every wait returns once its sleep is over
  weft::probe::CoalescingWait w(kMs / 4, kMax);
  epoll_event events[4];
  uint64_t datagrams = 0;
  const size_t loads[] = {0, 3, 50, 600, 5'000, 0, 0, 1'000, 7, 0};  // idle, light, heavy, bursts
  for (int i = 0; i < 40; ++i) {
    auto n = w.wait(*ep, events, 4, weft::mono_ns() + 1'000'000'000);
    ASSERT_TRUE(n);
    const int64_t woke = weft::mono_ns();  // at or after the wait's own record of the wake-up
    datagrams += loads[i % 10];
    w.handled(datagrams);
    EXPECT_LE(w.next_wake_ns(), woke + kMax) << i;
    EXPECT_LE(w.period_ns(), kMax) << i;
  }
}

// One wait per wake-up (issue 17): with its busy sockets out of the epoll set, a streaming loop
// waits once, in epoll, until the period's end; something else in the set that ends the period
// early sends it back to sleep-then-poll for kSleepAfterEarly wake-ups.
TEST(CoalescingWait, AQuietSetIsWaitedOnOnceAndAnEarlyWakeFallsBackToSleeping) {
  auto ep = weft::net::Epoll::create();
  auto ev = weft::EventFd::create();
  ASSERT_TRUE(ep && ev);
  ASSERT_TRUE(ep->add(ev->fd(), EPOLLIN, 1));
  weft::probe::CoalescingWait w(kMs / 2, kMs);
  w.handled(WakeCoalescer::kBusy);  // a stream is flowing
  ASSERT_TRUE(w.streaming());
  epoll_event events[4];
  auto deadline = [&] { return std::min(weft::mono_ns() + 1'000'000'000, w.next_wake_ns()); };
  // Not quiet: never a single wait.
  ASSERT_TRUE(w.wait(*ep, events, 4, deadline(), false));
  EXPECT_EQ(w.single_waits(), 0u);
  // Quiet and nothing ready: one epoll wait that lasts to the deadline.
  for (int i = 0; i < 3; ++i) {
    const int64_t d = deadline();
    auto n = w.wait(*ep, events, 4, d, true);
    ASSERT_TRUE(n);
    EXPECT_EQ(*n, 0);
    EXPECT_GE(weft::mono_ns(), d);  // epoll's timeout is a lower bound, whatever the load
  }
  EXPECT_EQ(w.single_waits(), 3u);
  // The eventfd ends a period early: the next kSleepAfterEarly wake-ups sleep first.
  ev->signal();
  auto n = w.wait(*ep, events, 4, deadline(), true);
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(w.single_waits(), 4u);
  ev->drain();
  for (int i = 0; i < weft::probe::CoalescingWait::kSleepAfterEarly; ++i)
    ASSERT_TRUE(w.wait(*ep, events, 4, deadline(), true));
  EXPECT_EQ(w.single_waits(), 4u);
  ASSERT_TRUE(w.wait(*ep, events, 4, deadline(), true));
  EXPECT_EQ(w.single_waits(), 5u);
}
