#include "probe/rdma/rtt.hpp"

#include <gtest/gtest.h>

using namespace weft::probe;
using weft::rdma::NicClock;

namespace {

// A probe measured in software: PING posted at 1000 (its send completion polled at 1100, which
// does not count), the PONG polled at 1000 + rtt.
RdmaProbeTiming sw_timing(int64_t rtt, int64_t delay, bool followup = true) {
  RdmaProbeTiming t;
  t.ping_post_mono_ns = 1000;
  t.ping_tx.poll_mono_ns = 1100;
  t.pong_rx.poll_mono_ns = 1000 + rtt;
  t.has_followup = followup;
  t.responder_delay_ns = delay;
  return t;
}

}  // namespace

TEST(RdmaRtt, SoftwareNetworkRttIsTotalMinusResponderDelay) {
  auto s = compute_rdma_rtt(StampClock::software(), sw_timing(50'000, 8'000));
  EXPECT_FALSE(s.weird);
  EXPECT_EQ(s.total_ns, 50'000);
  EXPECT_EQ(s.responder_delay_ns, 8'000);
  EXPECT_EQ(s.network_ns, 42'000);
  EXPECT_TRUE(s.has_network);
  EXPECT_TRUE(s.has_responder_delay);
  EXPECT_EQ(s.source, TimestampSource::user);
}

TEST(RdmaRtt, ResponderDelayAboveTotalIsWeirdAndNotSampled) {
  auto s = compute_rdma_rtt(StampClock::software(), sw_timing(50'000, 50'001));
  EXPECT_TRUE(s.weird);
  EXPECT_EQ(s.total_ns, 50'000);  // the total still counts
  EXPECT_FALSE(s.has_network);
  EXPECT_FALSE(s.has_responder_delay);
  // Equal is possible (zero network time at this resolution), not weird.
  auto e = compute_rdma_rtt(StampClock::software(), sw_timing(50'000, 50'000));
  EXPECT_FALSE(e.weird);
  EXPECT_EQ(e.network_ns, 0);
}

TEST(RdmaRtt, WithoutFollowupOnlyTheTotal) {
  auto s = compute_rdma_rtt(StampClock::software(), sw_timing(30'000, 0, false));
  EXPECT_EQ(s.total_ns, 30'000);
  EXPECT_FALSE(s.has_network);
  EXPECT_FALSE(s.has_responder_delay);
  EXPECT_FALSE(s.weird);
}

TEST(RdmaRtt, SoftwareSendTimeIsThePostNotTheCompletionPoll) {
  RdmaProbeTiming t = sw_timing(100, 0);
  t.ping_tx.poll_mono_ns = 9000;  // its completion polled long after the PONG (at 1100)
  auto s = compute_rdma_rtt(StampClock::software(), t);
  EXPECT_EQ(s.total_ns, 100);  // 1100 - post at 1000
  EXPECT_FALSE(s.weird);
}

TEST(RdmaRtt, HardwareTicksAreConvertedWithTheDeviceClock) {
  // A 156.25 MHz NIC clock (6.4 ns per tick): the seed took ticks for nanoseconds.
  const NicClock nic(156'250, (1ull << 48) - 1);
  RdmaProbeTiming t;
  t.ping_post_mono_ns = 0;
  t.pong_rx.poll_mono_ns = 1'000'000;  // the software interval around it: 1 ms
  t.ping_tx.nic_ticks = 1000;
  t.pong_rx.nic_ticks = 1000 + 15'625;  // 100 us
  t.has_followup = true;
  t.responder_delay_ns = 10'000;
  t.responder_hardware = true;
  auto s = compute_rdma_rtt(StampClock::hardware(nic), t);
  EXPECT_EQ(s.total_ns, 100'000);
  EXPECT_EQ(s.network_ns, 90'000);
  EXPECT_EQ(s.source, TimestampSource::hardware);
  EXPECT_FALSE(s.weird);
  // A responder that measured in software makes the sample's source software.
  t.responder_hardware = false;
  EXPECT_EQ(compute_rdma_rtt(StampClock::hardware(nic), t).source, TimestampSource::user);
}

TEST(RdmaRtt, HardwareAcrossTheCounterWrap) {
  const NicClock nic(1'000'000, (1ull << 48) - 1);  // 1 GHz, 48 bits
  RdmaProbeTiming t;
  t.pong_rx.poll_mono_ns = 1'000'000;
  t.ping_tx.nic_ticks = (1ull << 48) - 300;
  t.pong_rx.nic_ticks = 200;
  auto s = compute_rdma_rtt(StampClock::hardware(nic), t);
  EXPECT_EQ(s.total_ns, 500);
  EXPECT_FALSE(s.weird);
}

TEST(RdmaRtt, HardwareStampsThatCannotBeTrueFallBackAndAreWeird) {
  const NicClock nic(1'000'000, (1ull << 48) - 1);
  RdmaProbeTiming t;
  t.ping_post_mono_ns = 0;
  t.pong_rx.poll_mono_ns = 100'000;
  // PONG stamped before the PING: backwards.
  t.ping_tx.nic_ticks = 5000;
  t.pong_rx.nic_ticks = 4000;
  auto s = compute_rdma_rtt(StampClock::hardware(nic), t);
  EXPECT_TRUE(s.weird);
  EXPECT_EQ(s.total_ns, 100'000);
  EXPECT_EQ(s.source, TimestampSource::user);
  // Longer than the software interval that must contain it.
  t.pong_rx.nic_ticks = 5000 + 200'000;
  s = compute_rdma_rtt(StampClock::hardware(nic), t);
  EXPECT_TRUE(s.weird);
  EXPECT_EQ(s.total_ns, 100'000);
}

TEST(RdmaRtt, ResponderDelayOnBothClocks) {
  // PING polled at 50 us, PONG posted at 58 us, its completion polled at 60 us.
  CompletionStamp rx{1000, 50'000}, tx{1000 + 2500, 60'000};
  auto sw = responder_delay(StampClock::software(), rx, tx, 58'000);
  EXPECT_EQ(sw.ns, 8'000);  // software: PONG posted - PING polled
  EXPECT_FALSE(sw.hardware);
  auto hw =
      responder_delay(StampClock::hardware(NicClock(250'000, 0xffffffff)), rx, tx, 58'000);  // 4 ns/tick
  EXPECT_EQ(hw.ns, 10'000);
  EXPECT_TRUE(hw.hardware);
  // NIC stamps going backwards: the software interval instead, flagged as such.
  CompletionStamp tx_back{900, 60'000};
  auto back = responder_delay(StampClock::hardware(NicClock(250'000, 0xffffffff)), rx, tx_back, 58'000);
  EXPECT_EQ(back.ns, 8'000);
  EXPECT_FALSE(back.hardware);
  // A clock step cannot make it negative.
  EXPECT_EQ(responder_delay(StampClock::software(), rx, tx, 40'000).ns, 0);
}

TEST(RdmaRtt, ChoosesTheClock) {
  auto c = choose_stamp_clock(true, NicClock(1'000'000, (1ull << 48) - 1), "");
  EXPECT_TRUE(c.clock.hardware());
  EXPECT_TRUE(c.why.empty());
  c = choose_stamp_clock(true, std::nullopt, "completion timestamps not supported by rxe0");
  EXPECT_FALSE(c.clock.hardware());
  EXPECT_EQ(c.why, "completion timestamps not supported by rxe0");
  EXPECT_EQ(c.clock.source(), TimestampSource::user);
  c = choose_stamp_clock(true, NicClock(0, 0xffff), "");
  EXPECT_FALSE(c.clock.hardware());
  EXPECT_NE(c.why.find("unusable"), std::string::npos);
  c = choose_stamp_clock(false, NicClock(1'000'000, (1ull << 48) - 1), "");
  EXPECT_FALSE(c.clock.hardware());
}
