#include "msg/ring_math.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "base/random.hpp"

using namespace weft::msg;

TEST(RingMath, PlacesContiguouslyWhenItFits) {
  auto p = place(0, 100, 1000, false);
  EXPECT_EQ(p.start, 0u);
  EXPECT_EQ(p.end, 100u);
  p = place(900, 100, 1000, false);  // exactly up to the end
  EXPECT_EQ(p.start, 900u);
  EXPECT_EQ(p.end, 1000u);
  p = place(2950, 50, 1000, false);  // third lap
  EXPECT_EQ(p.start, 2950u);
}

TEST(RingMath, SkipsToTheNextLapInsteadOfWrapping) {
  auto p = place(950, 100, 1000, false);
  EXPECT_EQ(p.start, 1000u);
  EXPECT_EQ(p.end, 1100u);
  EXPECT_EQ(p.start % 1000, 0u);
  // A double-mapped ring writes across the end.
  p = place(950, 100, 1000, true);
  EXPECT_EQ(p.start, 950u);
  EXPECT_EQ(p.end, 1050u);
}

TEST(RingMath, FitsCountsSkippedBytesAsUsed) {
  // Head at 100, tail at 950: a 100-byte message skips 50 bytes and ends at 1100.
  auto p = place(950, 100, 1000, false);
  EXPECT_TRUE(fits(p, 100, 1000));
  EXPECT_FALSE(fits(p, 99, 1000));
  EXPECT_EQ(used(100, 950), 850u);
}

TEST(RingMath, CountersStayRightAcrossTheirOwnWrap) {
  const uint64_t size = 4096;
  const uint64_t head = UINT64_MAX - 100;  // 2^64 is a multiple of size
  const uint64_t tail = head + 3000;       // wrapped past 2^64
  EXPECT_EQ(used(head, tail), 3000u);
  auto p = place(tail, 200, size, true);
  EXPECT_TRUE(fits(p, head, size));
  auto q = place(tail, 1200, size, true);
  EXPECT_FALSE(fits(q, head, size));
  EXPECT_EQ(credits(2, UINT64_MAX - 1, 8), 4u);  // sent wrapped to 2, acked just before the wrap
}

TEST(RingMath, CreditsAndAckBatches) {
  EXPECT_EQ(credits(0, 0, 8), 8u);
  EXPECT_EQ(credits(8, 0, 8), 0u);
  EXPECT_EQ(credits(9, 2, 8), 1u);
  EXPECT_FALSE(ack_due(3, 0, 4));
  EXPECT_TRUE(ack_due(4, 0, 4));
  EXPECT_TRUE(ack_due(9, 4, 4));
}

// A simulated sender and receiver over a plain and a double-mapped ring: every message lies
// inside the ring (plain) or within one ring length of its start (double-mapped), no two live
// messages overlap, and the sender never waits when the receiver has released enough.
TEST(RingMath, SimulatedSenderNeverOverwritesLiveBytes) {
  for (bool magic : {false, true}) {
    const uint64_t size = 1 << 12, max = size / 4;
    weft::Rng rng(magic ? 7 : 8);
    uint64_t tail = UINT64_MAX - 10 * size, head = tail;  // cross the counters' wrap on the way
    std::vector<Placement> live;
    uint64_t sent = 0;
    for (int step = 0; step < 200000; ++step) {
      if (rng.below(2) == 0 && !live.empty()) {  // the receiver releases the oldest message
        head = live.front().end;
        live.erase(live.begin());
        continue;
      }
      const uint64_t len = rng.below(max + 1);
      auto p = place(tail, len, size, magic);
      if (!fits(p, head, size)) {
        // Waiting is only allowed while more than a message's worth is in use.
        ASSERT_GT(used(head, tail) + max, size - max) << step;
        continue;
      }
      const uint64_t off = p.start % size;
      if (!magic) {
        ASSERT_LE(off + len, size);
      }
      for (const auto& q : live) {
        // Live placements occupy [start, end) in counter space, and all of them lie within one ring.
        ASSERT_LE(p.end - q.start, size) << step;
      }
      live.push_back(p);
      tail = p.end;
      ++sent;
    }
    EXPECT_GT(sent, 50000u);
  }
}
