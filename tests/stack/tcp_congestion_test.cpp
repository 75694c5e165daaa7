// Congestion control after ssthresh: Reno's one SMSS per window and CUBIC's window curve
// (RFC 9438), driven by a window's worth of ACKs per round trip on a virtual clock.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "stack/tcp/congestion.hpp"

using namespace weft::stack::tcp;

namespace {

constexpr uint32_t kSmss = 1000;

// Runs congestion avoidance from `cwnd` for `seconds` with one ACK per segment, a window per
// `rtt_ns`; returns cwnd in segments at the end.
double grow(CongestionControl& cc, uint32_t& cwnd, int64_t& now, double seconds, int64_t rtt_ns) {
  const int64_t end = now + static_cast<int64_t>(seconds * 1e9);
  while (now < end) {
    const uint32_t acks = cwnd / kSmss;
    for (uint32_t i = 0; i < acks; ++i) cwnd = cc.on_ack(cwnd, kSmss, kSmss, now + rtt_ns * i / acks, rtt_ns);
    now += rtt_ns;
  }
  return static_cast<double>(cwnd) / kSmss;
}

}  // namespace

TEST(TcpCongestion, RenoHalvesAndAddsOneSegmentPerWindow) {
  CongestionControl cc(CcAlgorithm::reno);
  EXPECT_EQ(cc.on_congestion(20 * kSmss, kSmss), 10 * kSmss);
  EXPECT_EQ(cc.on_congestion(3 * kSmss, kSmss), 2 * kSmss);  // never below 2 SMSS
  uint32_t cwnd = 10 * kSmss;
  int64_t now = 0;
  EXPECT_EQ(grow(cc, cwnd, now, 0.5, 100'000'000), 15);  // 5 round trips
}

TEST(TcpCongestion, CubicBacksOffToSevenTenthsAndClimbsBackToWmaxAtK) {
  CongestionControl cc(CcAlgorithm::cubic);
  const uint32_t ssthresh = cc.on_congestion(100 * kSmss, kSmss);
  EXPECT_EQ(ssthresh, 70 * kSmss);
  EXPECT_DOUBLE_EQ(cc.w_max(), 100);
  // K = cbrt(W_max (1 - beta) / C) = cbrt(100 * 0.3 / 0.4) s; RTT 100 ms, so the Reno-friendly
  // estimate (about 0.53 segments per RTT) stays below the cubic until well past K.
  const double k = std::cbrt(75.0);
  uint32_t cwnd = ssthresh;
  int64_t now = 0;
  const int64_t rtt = 100'000'000;
  const double at_half_k = grow(cc, cwnd, now, k / 2, rtt);
  EXPECT_GT(at_half_k, 85);  // concave: most of the way back within half of K
  EXPECT_LT(at_half_k, 100);
  const double at_k = grow(cc, cwnd, now, k / 2, rtt);
  EXPECT_NEAR(at_k, 100, 2);  // the plateau around W_max
  const double later = grow(cc, cwnd, now, 4, rtt);
  // Convex past K: W(t) = 0.4 (t - K)^3 + 100 (t is one RTT ahead of the clock).
  const double want = 0.4 * std::pow(2 * (k / 2) + 4 + 0.1 - k, 3) + 100;
  EXPECT_NEAR(later, want, want * 0.05);
}

TEST(TcpCongestion, CubicFastConvergenceLowersWmaxWhenItWasNotReached) {
  CongestionControl cc(CcAlgorithm::cubic);
  cc.on_congestion(100 * kSmss, kSmss);
  cc.on_congestion(80 * kSmss, kSmss);
  EXPECT_DOUBLE_EQ(cc.w_max(), 80 * 1.7 / 2);  // RFC 9438 4.7
}

TEST(TcpCongestion, CubicFollowsTheRenoEstimateOnShortRoundTrips) {
  // RTT 1 ms: 4 s hold 4000 round trips, in which Reno's line (0.53 segments per RTT) passes
  // W_max long before the cubic would; the window must track it (RFC 9438 4.3).
  CongestionControl cc(CcAlgorithm::cubic);
  uint32_t cwnd = cc.on_congestion(100 * kSmss, kSmss);
  int64_t now = 0;
  const double w = grow(cc, cwnd, now, 0.2, 1'000'000);
  EXPECT_GT(w, 70 + 0.5 * 200 * 0.9);  // at least ~0.5 segments per RTT over 200 RTTs
}
