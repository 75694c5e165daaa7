// Window arithmetic and accumulation.
#include <gtest/gtest.h>

#include "probe/accumulator.hpp"

using namespace weft::probe;

TEST(Window, IndexIsFloorDivision) {
  const int64_t w = 10'000'000'000;
  EXPECT_EQ(window_index(0, w), 0);
  EXPECT_EQ(window_index(w - 1, w), 0);
  EXPECT_EQ(window_index(w, w), 1);
  EXPECT_EQ(window_index(-1, w), -1);
  EXPECT_EQ(window_index(-w, w), -1);
  EXPECT_EQ(window_index(-w - 1, w), -2);
  EXPECT_EQ(window_start(window_index(1'700'000'000'123'456'789, w), w), 1'700'000'000'000'000'000);
}

TEST(Window, AccumulatesCountsAndSummaries) {
  WindowAccumulator a;
  EXPECT_FALSE(a.open());
  a.start(170'000'000);
  EXPECT_TRUE(a.open());
  EXPECT_TRUE(a.empty());
  for (int i = 1; i <= 100; ++i) {
    RttSample s;
    s.total_ns = i * 1000 + 500;
    s.responder_delay_ns = 500;
    s.network_ns = i * 1000;
    s.has_network = s.has_responder_delay = true;
    s.source = TimestampSource::kernel;
    a.add_answer(s);
  }
  RttSample weird;
  weird.total_ns = 7'000;
  weird.weird = true;
  weird.source = TimestampSource::user;
  a.add_answer(weird);  // counted and in total RTT, not in network RTT
  a.add_lost();
  a.add_lost();
  a.add_late();
  a.add_duplicate();
  a.add_malformed();
  EXPECT_FALSE(a.empty());
  WindowStats ws;
  a.finish(10'000'000'000, ws);
  EXPECT_FALSE(a.open());
  EXPECT_EQ(ws.start_unix_ns, 1'700'000'000'000'000'000);
  EXPECT_EQ(ws.end_unix_ns, 1'700'000'010'000'000'000);
  EXPECT_EQ(ws.sent, 103u);
  EXPECT_EQ(ws.received, 101u);
  EXPECT_EQ(ws.lost, 2u);
  EXPECT_EQ(ws.late, 1u);
  EXPECT_EQ(ws.duplicate, 1u);
  EXPECT_EQ(ws.malformed, 1u);
  EXPECT_EQ(ws.weird, 1u);
  EXPECT_EQ(ws.timestamp_source, TimestampSource::user);  // the worst one seen
  EXPECT_EQ(ws.rtt_incl_responder_delay.count, 101u);
  EXPECT_EQ(ws.network_rtt.count, 100u);
  EXPECT_EQ(ws.network_rtt.min_ns, 1000);
  EXPECT_EQ(ws.network_rtt.max_ns, 100'000);
  EXPECT_EQ(ws.network_rtt.mean_ns, 50'500);
  EXPECT_NEAR(static_cast<double>(ws.network_rtt.p50_ns), 50'000.0, 500.0);
  EXPECT_NEAR(static_cast<double>(ws.network_rtt.p99_ns), 99'000.0, 990.0);
  EXPECT_EQ(ws.responder_delay.p50_ns, 500);
  EXPECT_LE(ws.network_rtt.p50_ns, ws.network_rtt.p90_ns);
  EXPECT_LE(ws.network_rtt.p90_ns, ws.network_rtt.p95_ns);
  EXPECT_LE(ws.network_rtt.p95_ns, ws.network_rtt.p99_ns);
  EXPECT_LE(ws.network_rtt.p99_ns, ws.network_rtt.p999_ns);
  EXPECT_LE(ws.network_rtt.p999_ns, ws.network_rtt.max_ns);
}

TEST(Window, RestartClearsEverything) {
  WindowAccumulator a;
  a.start(1);
  a.add_lost();
  WindowStats ws;
  a.finish(1000, ws);
  a.start(2);
  EXPECT_TRUE(a.empty());
  a.finish(1000, ws);
  EXPECT_EQ(ws.sent, 0u);
  EXPECT_EQ(ws.rtt_incl_responder_delay.count, 0u);
  EXPECT_EQ(ws.rtt_incl_responder_delay.p50_ns, 0);
}

// Counts only (weft ping without --window, issue 17 RSS): the same counts, no latency summaries.
TEST(Window, WithoutLatencyCountsTheSameAndKeepsNoSummaries) {
  WindowAccumulator with, without;
  without.keep_latency(false);
  with.start(3);
  without.start(3);
  for (int i = 1; i <= 50; ++i) {
    RttSample s;
    s.total_ns = i * 10'000;
    s.network_ns = i * 9'000;
    s.responder_delay_ns = i * 1'000;
    s.has_network = s.has_responder_delay = true;
    s.weird = i == 7;
    s.source = TimestampSource::kernel;
    with.add_answer(s);
    without.add_answer(s);
  }
  with.add_lost();
  without.add_lost();
  WindowStats a, b;
  with.finish(1'000, a);
  without.finish(1'000, b);
  EXPECT_EQ(b.sent, a.sent);
  EXPECT_EQ(b.received, a.received);
  EXPECT_EQ(b.lost, a.lost);
  EXPECT_EQ(b.weird, a.weird);
  EXPECT_EQ(b.timestamp_source, a.timestamp_source);
  EXPECT_EQ(a.rtt_incl_responder_delay.count, 50u);
  EXPECT_EQ(b.rtt_incl_responder_delay.count, 0u);
  EXPECT_EQ(b.network_rtt.count, 0u);
  EXPECT_EQ(b.responder_delay.count, 0u);
}
