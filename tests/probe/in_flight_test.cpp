// The IP prober's in-flight table: sized to what is asked (issue 17, RSS: no power of two), every
// sequence number of a table's worth in a slot of its own, and growth keeping what it holds.
#include "probe/ip/in_flight.hpp"

#include <gtest/gtest.h>

#include <set>

namespace {

using weft::probe::InFlightTable;
using weft::probe::Slot;
using weft::probe::SlotState;

void put(InFlightTable& t, uint64_t seq) {
  Slot& s = t.at(seq);
  s = Slot{};
  s.seq = seq;
  s.state = SlotState::pending;
}

TEST(InFlightTable, SizedAsAskedWithAFloor) {
  EXPECT_EQ(InFlightTable(12'750).size(), 12'750u);
  EXPECT_EQ(InFlightTable(10).size(), InFlightTable::kMinSize);
  EXPECT_LE(sizeof(Slot), 112u);  // what docs/probe.md counts per slot
}

TEST(InFlightTable, ATablesWorthOfProbesEachKeepTheirSlot) {
  InFlightTable t(3'001);  // neither a power of two nor a divisor of 2^64
  const uint64_t first = (uint64_t{1} << 40) - 1'000;
  std::set<const Slot*> used;
  for (uint64_t seq = first; seq < first + t.size(); ++seq) {
    put(t, seq);
    used.insert(&t.at(seq));
  }
  EXPECT_EQ(used.size(), t.size());
  for (uint64_t seq = first; seq < first + t.size(); ++seq) ASSERT_NE(t.find(seq), nullptr) << seq;
  // One more takes the oldest's slot: it is gone, the rest stay.
  put(t, first + t.size());
  EXPECT_EQ(t.find(first), nullptr);
  EXPECT_NE(t.find(first + 1), nullptr);
  EXPECT_EQ(t.find(first + 2 * t.size()), nullptr);  // never sent
}

TEST(InFlightTable, GrowKeepsEveryProbeAndNeverShrinks) {
  InFlightTable t(1'024);
  for (uint64_t seq = 5'000; seq < 6'024; ++seq) put(t, seq);
  t.grow(2'500);
  EXPECT_EQ(t.size(), 2'500u);
  for (uint64_t seq = 5'000; seq < 6'024; ++seq) {
    Slot* s = t.find(seq);
    ASSERT_NE(s, nullptr) << seq;
    EXPECT_EQ(s->seq, seq);
  }
  for (uint64_t seq = 6'024; seq < 7'500; ++seq) put(t, seq);  // 2,500 in all, no collision
  for (uint64_t seq = 5'000; seq < 7'500; ++seq) ASSERT_NE(t.find(seq), nullptr) << seq;
  t.grow(100);
  EXPECT_EQ(t.size(), 2'500u);
}

}  // namespace
