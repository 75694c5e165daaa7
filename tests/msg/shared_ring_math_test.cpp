#include "msg/shared_ring_math.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <vector>

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
// random points (after announcing, after reserving, while waiting for space). Every message of a
// sender that lives is delivered exactly once in its order, nothing live is ever skipped, and the
// ring never blocks for good (the run ends within its step bound).
TEST(SharedRingMath, SimulatedSendersDyingAnywhereNeverBlockOrLoseLiveMessages) {
  constexpr uint64_t kSize = 4096, kMax = 512;
  uint64_t all_holes = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    const unsigned n = 2 + seed % 3;
    constexpr uint64_t kPerSender = 300;
    struct Sim {
      bool mortal = false, gone = false, reserved = false, announced_start = false;
      uint64_t sent = 0, arrived = 0, announce = 0, start = 0, len = 0;
      std::vector<uint64_t> delivered;  // message indexes in delivery order
    };
    std::vector<Sim> s(n);
    for (unsigned i = 0; i < n; ++i) s[i].mortal = i != 0 && rng() % 2 == 0;  // sender 0 always lives
    uint64_t counter = 0, tail = 0;
    std::map<uint64_t, std::pair<unsigned, uint64_t>> owner;  // reservation start -> sender, message
    std::map<uint64_t, std::pair<unsigned, uint64_t>> arrived;
    std::map<uint64_t, uint64_t> lens;
    uint64_t holes = 0;
    auto done = [&] {
      for (auto& x : s)
        if (!x.gone && x.sent < kPerSender) return false;
      return tail == counter;
    };
    int steps = 0;
    for (; steps < 2'000'000 && !done(); ++steps) {
      const unsigned pick = static_cast<unsigned>(rng() % (n + 1));
      if (pick < n) {
        Sim& x = s[pick];
        if (x.gone || x.sent == kPerSender) continue;
        if (x.mortal && rng() % 400 == 0) {
          x.gone = true;  // dies wherever it is
          continue;
        }
        if (!x.reserved) {  // announce + FETCH_AND_ADD (one list, in order)
          x.announce = announce_word(x.sent + 1, std::nullopt);
          x.len = rng() % (kMax + 1);
          x.start = counter;
          counter += reserved_bytes(x.len);
          owner[x.start] = {pick, x.sent};
          x.reserved = true;
          x.announced_start = false;
        } else if (x.start + reserved_bytes(x.len) - tail <= kSize) {  // fits (head == tail here)
          arrived[x.start] = {pick, x.sent};
          lens[x.start] = x.len;
          ++x.arrived;
          ++x.sent;
          x.reserved = false;
        } else if (!x.announced_start) {
          x.announce = announce_word(x.sent + 1, x.start);
          x.announced_start = true;
        }
        continue;
      }
      // The receiver.
      if (auto it = arrived.find(tail); it != arrived.end()) {
        s[it->second.first].delivered.push_back(it->second.second);
        tail += reserved_bytes(lens[tail]);
        arrived.erase(it);
        continue;
      }
      std::vector<SenderView> views;
      for (auto& x : s) views.push_back({x.gone, x.arrived, x.announce});
      auto next = arrived.empty() ? std::nullopt : std::optional<uint64_t>(arrived.begin()->first);
      auto v = judge_hole(tail, counter, next, views);
      if (!v.skip) continue;
      for (auto it = owner.lower_bound(tail); it != owner.end() && it->first < v.to; ++it) {
        ASSERT_TRUE(s[it->second.first].gone)
            << "seed " << seed << ": skipped a live sender's message at " << it->first;
        ASSERT_FALSE(arrived.contains(it->first));
      }
      ++holes;
      tail = v.to;
    }
    all_holes += holes;
    ASSERT_TRUE(done()) << "seed " << seed << ": the ring blocked (tail " << tail << ", reserved " << counter
                        << ")";
    for (unsigned i = 0; i < n; ++i) {
      const Sim& x = s[i];
      for (uint64_t k = 0; k < x.delivered.size(); ++k) ASSERT_EQ(x.delivered[k], k) << "seed " << seed;
      if (!x.gone)
        EXPECT_EQ(x.delivered.size(), kPerSender);
      else
        EXPECT_EQ(x.delivered.size(), x.sent);  // everything it wrote before dying
    }
  }
  EXPECT_GT(all_holes, 5u);  // the dying senders did leave holes to skip
}
