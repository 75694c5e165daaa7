// RTT arithmetic: responder delay taken out, timestamp sources, and clock edge cases.
#include "probe/rtt.hpp"

#include <gtest/gtest.h>

#include "probe/wire.hpp"

using namespace weft::probe;

namespace {

// A probe sent at monotonic 1 s, answered 300 us later by user clocks, 100 us by kernel clocks.
ProbeTiming base() {
  ProbeTiming t;
  t.tx_user_mono = 1'000'000'000;
  t.rx_user_mono = 1'000'300'000;
  t.tx_kernel.software_ns = 1'700'000'000'000'010'000;
  t.rx_kernel.software_ns = 1'700'000'000'000'110'000;
  t.has_responder = true;
  t.responder_rx_ns = 1'700'000'000'500'000'000;  // the responder's own clock: any offset
  t.responder_tx_ns = 1'700'000'000'500'030'000;  // 30 us later
  t.responder_flags = wire::kRxKernel | wire::kTxKernel;
  return t;
}

}  // namespace

TEST(Rtt, KernelTimesAndResponderDelay) {
  const RttSample s = compute_rtt(base());
  EXPECT_EQ(s.total_ns, 100'000);
  EXPECT_EQ(s.responder_delay_ns, 30'000);
  EXPECT_EQ(s.network_ns, 70'000);
  EXPECT_TRUE(s.has_network);
  EXPECT_TRUE(s.has_responder_delay);
  EXPECT_FALSE(s.weird);
  EXPECT_EQ(s.source, TimestampSource::kernel);
}

TEST(Rtt, ResponderUserSendTimeMakesTheSourceUser) {
  auto t = base();
  t.responder_flags = wire::kRxKernel;  // no follow-up: tx is a user-space read
  const RttSample s = compute_rtt(t);
  EXPECT_EQ(s.network_ns, 70'000);
  EXPECT_EQ(s.source, TimestampSource::user);
}

TEST(Rtt, MissingKernelTimeFallsBackToMonotonicPair) {
  auto t = base();
  t.rx_kernel = {};
  const RttSample s = compute_rtt(t);
  EXPECT_EQ(s.total_ns, 300'000);
  EXPECT_EQ(s.network_ns, 270'000);
  EXPECT_EQ(s.source, TimestampSource::user);
  EXPECT_FALSE(s.weird);
}

TEST(Rtt, RealtimeStepBackwardIsCaught) {
  auto t = base();
  t.rx_kernel.software_ns = t.tx_kernel.software_ns - 5'000'000;  // clock stepped back 5 ms
  const RttSample s = compute_rtt(t);
  EXPECT_TRUE(s.weird);
  EXPECT_EQ(s.total_ns, 300'000);  // the monotonic interval instead
  EXPECT_EQ(s.source, TimestampSource::user);
}

TEST(Rtt, RealtimeStepForwardIsCaught) {
  auto t = base();
  t.rx_kernel.software_ns = t.tx_kernel.software_ns + 2'000'000'000;  // 2 s can't fit in 300 us
  const RttSample s = compute_rtt(t);
  EXPECT_TRUE(s.weird);
  EXPECT_EQ(s.total_ns, 300'000);
}

TEST(Rtt, KernelRttWithinSlackIsKept) {
  auto t = base();
  t.rx_kernel.software_ns = t.tx_kernel.software_ns + 300'000 + kClockSlackNs;  // at the limit
  const RttSample s = compute_rtt(t);
  EXPECT_FALSE(s.weird);
  EXPECT_EQ(s.total_ns, 300'000 + kClockSlackNs);
}

TEST(Rtt, ResponderDelayLargerThanRttIsWeirdAndNotSubtracted) {
  auto t = base();
  t.responder_tx_ns = t.responder_rx_ns + 150'000;  // 150 us > 100 us total
  const RttSample s = compute_rtt(t);
  EXPECT_TRUE(s.weird);
  EXPECT_EQ(s.total_ns, 100'000);
  EXPECT_FALSE(s.has_network);
  EXPECT_FALSE(s.has_responder_delay);
}

TEST(Rtt, NegativeResponderDelayIsWeird) {
  auto t = base();
  t.responder_tx_ns = t.responder_rx_ns - 1;
  const RttSample s = compute_rtt(t);
  EXPECT_TRUE(s.weird);
  EXPECT_FALSE(s.has_network);
}

TEST(Rtt, ResponderDelayEqualToRttGivesZeroNetwork) {
  auto t = base();
  t.responder_tx_ns = t.responder_rx_ns + 100'000;
  const RttSample s = compute_rtt(t);
  EXPECT_FALSE(s.weird);
  EXPECT_EQ(s.network_ns, 0);
}

TEST(Rtt, HardwareOnBothEndsWins) {
  auto t = base();
  t.tx_kernel.hardware_ns = 5'000'000;  // NIC clock: unrelated to realtime
  t.rx_kernel.hardware_ns = 5'090'000;
  t.responder_flags = wire::kRxHardware | wire::kTxHardware;
  const RttSample s = compute_rtt(t);
  EXPECT_EQ(s.total_ns, 90'000);
  EXPECT_EQ(s.network_ns, 60'000);
  EXPECT_EQ(s.source, TimestampSource::hardware);
}

TEST(Rtt, HardwareOnOneEndOnlyUsesSoftware) {
  auto t = base();
  t.tx_kernel.hardware_ns = 5'000'000;
  const RttSample s = compute_rtt(t);
  EXPECT_EQ(s.total_ns, 100'000);
  EXPECT_EQ(s.source, TimestampSource::kernel);
}

TEST(Rtt, TcpConnectUsesKernelRttAndHasNoResponder) {
  ProbeTiming t;
  t.tx_user_mono = 10;
  t.rx_user_mono = 10 + 80'000;
  t.kernel_rtt_ns = 42'000;
  const RttSample s = compute_rtt(t);
  EXPECT_EQ(s.total_ns, 42'000);
  EXPECT_EQ(s.network_ns, 42'000);
  EXPECT_FALSE(s.has_responder_delay);
  EXPECT_EQ(s.source, TimestampSource::kernel);
  t.kernel_rtt_ns = 0;  // no kernel sample (SYN retransmitted): the user-space interval
  const RttSample u = compute_rtt(t);
  EXPECT_EQ(u.total_ns, 80'000);
  EXPECT_EQ(u.source, TimestampSource::user);
}

TEST(Rtt, WorstSourceOrder) {
  EXPECT_EQ(worst(TimestampSource::hardware, TimestampSource::kernel), TimestampSource::kernel);
  EXPECT_EQ(worst(TimestampSource::user, TimestampSource::kernel), TimestampSource::user);
  EXPECT_EQ(worst(TimestampSource::hardware, TimestampSource::hardware), TimestampSource::hardware);
}
