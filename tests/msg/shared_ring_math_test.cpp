#include "msg/shared_ring_math.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "shared_ring_sim.hpp"

using namespace weft::msg;

TEST(SharedRingMath, ReservationsAreWholeWordsAndNeverEmpty) {
  EXPECT_EQ(reserved_bytes(0), 8u);  // a zero-length message still takes a place in the order
  EXPECT_EQ(reserved_bytes(1), 8u);
  EXPECT_EQ(reserved_bytes(8), 8u);
  EXPECT_EQ(reserved_bytes(9), 16u);
  EXPECT_EQ(reserved_bytes(65536), 65536u);
  EXPECT_EQ(reserved_bytes(65537), 65544u);
}

TEST(SharedRingMath, OffsetsMapToTheCounterInTheWindowAfterFrom) {
  EXPECT_EQ(counter_at(0, 0, 1024), 0u);
  EXPECT_EQ(counter_at(1000, 1000, 1024), 1000u);
  EXPECT_EQ(counter_at(1000, 8, 1024), 1032u);  // past the end: the next lap
  EXPECT_EQ(counter_at(5 * 1024 + 16, 8, 1024), 6 * 1024 + 8u);
  const uint64_t near_top = UINT64_MAX - 1023;  // counters stay right across 2^64 (size divides it)
  EXPECT_EQ(counter_at(near_top, 16, 1024) - near_top, 16u);
}

TEST(SharedRingMath, AnnouncementWordCarriesSequenceAndStart) {
  const uint64_t w = announce_word(7, 4096);
  EXPECT_EQ(w >> 48, 7u);
  EXPECT_EQ((w & kStartUnknown) * 8, 4096u);
  EXPECT_EQ(announce_word(0x10007, std::nullopt) >> 48, 7u);  // sequence mod 2^16
  EXPECT_EQ(announce_word(3, std::nullopt) & kStartUnknown, kStartUnknown);
}

TEST(SharedRingMath, NoHoleWithoutAReservationAtTheTail) {
  std::vector<SenderView> s{{true, 0, announce_word(1, std::nullopt)}};
  auto v = judge_hole(64, 64, std::nullopt, s);
  EXPECT_FALSE(v.skip);
  EXPECT_EQ(v.waiting_for, -1);
}

TEST(SharedRingMath, SkipsAHoleOnlyGoneSendersCanOwn) {
  // Sender 0 gone with a reservation in flight; sender 1 has nothing in flight; a later message
  // arrived at 96: [64, 96) is the gone sender's.
  std::vector<SenderView> s{{true, 3, announce_word(4, std::nullopt)}, {false, 5, announce_word(5, 88)}};
  auto v = judge_hole(64, 200, 96, s);
  EXPECT_TRUE(v.skip);
  EXPECT_EQ(v.to, 96u);
  // Nothing arrived after it: up to the reservation counter read before the arrivals.
  v = judge_hole(64, 120, std::nullopt, s);
  EXPECT_TRUE(v.skip);
  EXPECT_EQ(v.to, 120u);
}

TEST(SharedRingMath, WaitsForALiveSenderThatMayOwnTheTail) {
  // Live sender 1 announced message 6 (5 arrived) without a start: it may be reserving 64 now.
  std::vector<SenderView> s{{true, 3, announce_word(4, std::nullopt)},
                            {false, 5, announce_word(6, std::nullopt)}};
  auto v = judge_hole(64, 200, 96, s);
  EXPECT_FALSE(v.skip);
  EXPECT_EQ(v.waiting_for, 1);
  // It announced the tail itself: it will write it.
  s[1].announce = announce_word(6, 64);
  v = judge_hole(64, 200, 96, s);
  EXPECT_FALSE(v.skip);
  EXPECT_EQ(v.waiting_for, 1);
  // It announced a later start (waiting for space there): the hole ends before it.
  s[1].announce = announce_word(6, 80);
  v = judge_hole(64, 200, 96, s);
  EXPECT_TRUE(v.skip);
  EXPECT_EQ(v.to, 80u);
  // An announcement that is neither the next message nor the current one: be careful, wait.
  s[1].announce = announce_word(9, 80);
  v = judge_hole(64, 200, 96, s);
  EXPECT_FALSE(v.skip);
}

// N senders and the receiver stepped in random order over a small ring, some senders dying at
// random points (after announcing, after reserving, while waiting for space), others stalling
// (not scheduled for long stretches). Nothing live is ever skipped, every message of a sender
// that lives is delivered once in its order, and the ring never blocks for good: once the
// survivors run, it drains within a bounded number of rounds.
TEST(SharedRingMath, SimulatedSendersDyingAnywhereNeverBlockOrLoseLiveMessages) {
  uint64_t all_holes = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    sim::SharedRingSim sim(2 + seed % 3, 4096, 300);
    std::vector<bool> mortal(sim.senders());
    for (unsigned i = 1; i < sim.senders(); ++i) mortal[i] = rng() % 2 == 0;  // sender 0 always lives
    for (int step = 0; step < 200'000 && !sim.finished(); ++step) {
      const unsigned pick = static_cast<unsigned>(rng() % (sim.senders() + 1));
      if (pick == sim.senders()) {
        const std::string e = sim.receiver_step();
        ASSERT_EQ(e, "") << "seed " << seed;
      } else if (mortal[pick] && rng() % 400 == 0) {
        sim.die(pick);
      } else {
        sim.sender_step(pick, rng() % 513);
      }
    }
    ASSERT_EQ(sim.drain(100'000, 64), "") << "seed " << seed;
    all_holes += sim.holes();
  }
  EXPECT_GT(all_holes, 5u);  // the dying senders did leave holes to skip
}
