// The responder's table of follow-up entries held for a pair's next reply (held_followups.hpp).
#include "probe/ip/held_followups.hpp"

#include <gtest/gtest.h>

#include <set>

using namespace weft::probe;

namespace {
struct Key {
  uint64_t v = 0;
  bool operator==(const Key&) const = default;
};
}  // namespace

TEST(HeldFollowups, FindsAddsHoldsAndTakes) {
  HeldFollowups<Key> h(4);
  EXPECT_EQ(h.find({1}, 7), nullptr);
  auto* a = h.find_or_add({1}, 7);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(h.find_or_add({1}, 7), a);
  auto* b = h.find_or_add({2}, 7);  // same hash, other key: its own pair
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(h.find({2}, 7), b);
  EXPECT_EQ(h.find({3}, 7), nullptr);
  h.hold(*a, {10, 100, 200}, wire::kTxKernel, 1000);
  h.hold(*a, {11, 110, 210}, wire::kTxKernel, 2000);
  EXPECT_EQ(a->held_since, 1000);  // the oldest entry's time
  EXPECT_EQ(h.held(), 2u);
  wire::Followups out;
  h.take(*a, out);
  EXPECT_EQ(out.count, 2);
  EXPECT_EQ(out.flags, wire::kTxKernel);
  EXPECT_EQ(out.entries[1].seq, 11u);
  EXPECT_EQ(out.entries[1].responder_tx_ns, 210);
  EXPECT_EQ(a->count, 0);
  EXPECT_EQ(h.held(), 0u);
  h.hold(*a, {12, 120, 220}, wire::kTxHardware | wire::kRxHardware, 5000);
  EXPECT_EQ(a->held_since, 5000);  // a new oldest
  EXPECT_EQ(a->flags, wire::kTxHardware | wire::kRxHardware);
}

TEST(HeldFollowups, IsBoundedAndClears) {
  HeldFollowups<Key> h(3);
  std::set<void*> seen;
  for (uint64_t k = 0; k < 3; ++k) {
    auto* p = h.find_or_add({k}, k * 0x9e3779b97f4a7c15ULL);
    ASSERT_NE(p, nullptr);
    seen.insert(p);
  }
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_TRUE(h.full());
  EXPECT_EQ(h.find_or_add({99}, 99), nullptr);                    // full: no room for a new pair
  EXPECT_NE(h.find_or_add({1}, 0x9e3779b97f4a7c15ULL), nullptr);  // ... but the old ones are found
  h.hold(*h.find({2}, 2 * 0x9e3779b97f4a7c15ULL), {5, 1, 2}, wire::kTxKernel, 1);
  EXPECT_EQ(h.pairs().size(), 3u);
  h.clear();
  EXPECT_EQ(h.held(), 0u);
  EXPECT_FALSE(h.full());
  EXPECT_EQ(h.find({1}, 0x9e3779b97f4a7c15ULL), nullptr);
  EXPECT_NE(h.find_or_add({99}, 99), nullptr);
}
