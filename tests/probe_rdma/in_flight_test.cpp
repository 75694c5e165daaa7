#include "probe/rdma/in_flight.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace weft::probe;

namespace {

struct Resolved {
  uint64_t seq;
  RdmaOutcome outcome;
  RttSample sample;
};

struct Fixture {
  std::vector<Resolved> out;
  RdmaInFlight table{16, [this](RdmaSlot& s, RdmaOutcome o) {
                       out.push_back({s.seq, o, compute_rdma_rtt(StampClock::software(), s.timing)});
                     }};
  // Probe seq posted at t, deadline t + 1 ms.
  void send(uint64_t seq, int64_t t) { table.start(seq, 0, 0, t, t + 1'000'000, t + 1'000'000); }
  static CompletionStamp at(int64_t t) { return CompletionStamp{0, t}; }
};

}  // namespace

TEST(RdmaInFlight, ResolvesWhenAllThreeEventsAreInWhateverTheirOrder) {
  Fixture f;
  f.send(1, 0);
  f.send(2, 10);
  f.send(3, 20);
  // seq 1: tx, pong, follow-up. seq 2: follow-up before pong. seq 3: pong before its own tx.
  EXPECT_EQ(f.table.on_tx(1, f.at(5)), RdmaMatch::ok);
  EXPECT_EQ(f.table.on_tx(2, f.at(15)), RdmaMatch::ok);
  EXPECT_EQ(f.table.on_followup(2, 300, false), RdmaMatch::ok);
  EXPECT_EQ(f.table.on_pong(3, f.at(1020)), RdmaMatch::ok);
  EXPECT_EQ(f.table.on_pong(1, f.at(1005)), RdmaMatch::ok);
  EXPECT_TRUE(f.out.empty());
  EXPECT_EQ(f.table.on_followup(1, 200, false), RdmaMatch::ok);
  EXPECT_EQ(f.table.on_pong(2, f.at(1015)), RdmaMatch::ok);
  EXPECT_EQ(f.table.on_followup(3, 100, false), RdmaMatch::ok);
  EXPECT_EQ(f.table.on_tx(3, f.at(25)), RdmaMatch::ok);
  // Software stamps: total = PONG polled - PING posted.
  ASSERT_EQ(f.out.size(), 3u);
  EXPECT_EQ(f.out[0].seq, 1u);
  EXPECT_EQ(f.out[0].sample.total_ns, 1005);
  EXPECT_EQ(f.out[0].sample.network_ns, 805);
  EXPECT_EQ(f.out[1].seq, 2u);
  EXPECT_EQ(f.out[1].sample.network_ns, 705);
  EXPECT_EQ(f.out[2].seq, 3u);
  EXPECT_EQ(f.out[2].sample.network_ns, 900);
  for (auto& r : f.out) EXPECT_EQ(r.outcome, RdmaOutcome::answered);
  EXPECT_EQ(f.table.pending(), 0u);
}

TEST(RdmaInFlight, DuplicatesLateAndUnknown) {
  Fixture f;
  f.send(1, 0);
  f.table.on_tx(1, f.at(1));
  f.table.on_pong(1, f.at(100));
  f.table.on_followup(1, 10, false);
  EXPECT_EQ(f.table.on_pong(1, f.at(200)), RdmaMatch::duplicate);
  EXPECT_EQ(f.table.on_followup(1, 10, false), RdmaMatch::duplicate);
  EXPECT_EQ(f.table.on_pong(99, f.at(200)), RdmaMatch::unknown);
  f.send(2, 1000);
  f.table.sweep(1000 + 1'000'000, 0);  // deadline: lost
  ASSERT_EQ(f.out.size(), 2u);
  EXPECT_EQ(f.out[1].outcome, RdmaOutcome::lost);
  EXPECT_EQ(f.table.on_pong(2, f.at(2'000'000)), RdmaMatch::late);
}

TEST(RdmaInFlight, AnsweredWithoutFollowupAfterTheGrace) {
  Fixture f;
  f.send(1, 0);
  f.table.on_tx(1, f.at(1));
  f.table.on_pong(1, f.at(500));
  f.table.sweep(500 + 199, 200);
  EXPECT_TRUE(f.out.empty());
  f.table.sweep(500 + 200, 200);
  ASSERT_EQ(f.out.size(), 1u);
  EXPECT_EQ(f.out[0].outcome, RdmaOutcome::answered);
  EXPECT_EQ(f.out[0].sample.total_ns, 500);
  EXPECT_FALSE(f.out[0].sample.has_network);
  // Its follow-up arriving now is late, not a duplicate.
  EXPECT_EQ(f.table.on_followup(1, 5, false), RdmaMatch::late);
}

TEST(RdmaInFlight, SweepStopsAtTheFirstProbeNotYetDue) {
  Fixture f;
  for (uint64_t s = 1; s <= 5; ++s) f.send(s, static_cast<int64_t>(s) * 1000);
  f.table.sweep(3000 + 1'000'000, 0);  // deadlines of 1..3 passed
  ASSERT_EQ(f.out.size(), 3u);
  EXPECT_EQ(f.out[2].seq, 3u);
  EXPECT_EQ(f.table.pending(), 2u);
}

TEST(RdmaInFlight, FullRingEvictsTheOldestUnresolved) {
  Fixture f;
  const uint64_t n = f.table.size();
  for (uint64_t s = 1; s <= n + 3; ++s) f.send(s, 0);
  ASSERT_EQ(f.out.size(), 3u);
  EXPECT_EQ(f.out[0].seq, 1u);
  EXPECT_EQ(f.out[0].outcome, RdmaOutcome::evicted);
  EXPECT_EQ(f.table.pending(), n);
  // The evicted probe's answer is now unknown (its slot holds another probe).
  EXPECT_EQ(f.table.on_pong(1, f.at(5)), RdmaMatch::unknown);
}

TEST(RdmaInFlight, SendFailureIsLostAtOnce) {
  Fixture f;
  f.send(1, 0);
  f.table.on_send_failed(1);
  ASSERT_EQ(f.out.size(), 1u);
  EXPECT_EQ(f.out[0].outcome, RdmaOutcome::lost);
  EXPECT_EQ(f.table.pending(), 0u);
}
