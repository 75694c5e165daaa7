// The agent's outbox: order, spooling, the cap, and pick-up after a restart.
#include "agent/outbox.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "lib/test_util.hpp"

using namespace weft::agent;
using weft::testlib::TempDir;
using weft::testlib::window;

namespace {
std::vector<weft::proto::WindowStats> batch(int first, int n) {
  std::vector<weft::proto::WindowStats> v;
  for (int i = 0; i < n; ++i) v.push_back(window("peer", (first + i) * 1'000'000'000LL));
  return v;
}
int64_t first_start(const Batch& b) { return b.windows.front().start_unix_ns; }
}  // namespace

TEST(Outbox, DeliversInOrderAcrossMemoryAndSpool) {
  TempDir dir;
  Outbox o({dir.file("spool"), /*memory_windows=*/10, /*spool_max_bytes=*/1 << 20});
  ASSERT_TRUE(o.open());
  for (int i = 0; i < 10; ++i) o.push(batch(i * 5, 5));  // 50 windows: most go to disk
  EXPECT_EQ(o.pending_windows(), 50u);
  EXPECT_GT(o.spooled_batches(), 0u);
  for (int i = 0; i < 10; ++i) {
    auto b = o.front();
    ASSERT_TRUE(b);
    EXPECT_EQ(first_start(*b), i * 5 * 1'000'000'000LL);
    ASSERT_EQ(b->windows.size(), 5u);
    o.pop(b->seq);
  }
  EXPECT_FALSE(o.front());
  EXPECT_EQ(o.dropped_windows(), 0u);
}

TEST(Outbox, CapDropsTheOldestAndCountsIt) {
  TempDir dir;
  Outbox o({dir.file("spool"), 5, /*spool_max_bytes=*/600});
  ASSERT_TRUE(o.open());
  for (int i = 0; i < 20; ++i) o.push(batch(i * 5, 5));
  EXPECT_GT(o.dropped_windows(), 0u);
  EXPECT_EQ(o.pending_windows() + o.dropped_windows(), 100u);
  auto b = o.front();
  ASSERT_TRUE(b);
  EXPECT_GT(first_start(*b), 0);  // the oldest went first
}

TEST(Outbox, SpoolSurvivesARestart) {
  TempDir dir;
  {
    Outbox o({dir.file("spool"), 100, 1 << 20});
    ASSERT_TRUE(o.open());
    o.push(batch(0, 3));
    o.push(batch(3, 3));
    o.spill_all();  // what the agent does on shutdown
  }
  Outbox o({dir.file("spool"), 100, 1 << 20});
  ASSERT_TRUE(o.open());
  EXPECT_EQ(o.pending_windows(), 6u);
  auto b = o.front();
  ASSERT_TRUE(b);
  EXPECT_EQ(first_start(*b), 0);
  o.pop(b->seq);
  o.push(batch(6, 1));  // new batches come after the recovered ones
  EXPECT_EQ(first_start(*o.front()), 3'000'000'000LL);
}

TEST(Outbox, MemoryOnlyDropsOldestBeyondTheLimit) {
  Outbox o({"", 10, 0});
  ASSERT_TRUE(o.open());
  for (int i = 0; i < 5; ++i) o.push(batch(i * 5, 5));
  EXPECT_EQ(o.dropped_windows(), 15u);
  EXPECT_EQ(first_start(*o.front()), 15'000'000'000LL);
}

// A batch the controller refuses as malformed leaves the queue (it would block everything behind
// it) but is kept on disk and counted, whether it was in memory or spooled; a restart does not
// queue it again.
TEST(Outbox, SetAsideKeepsARefusedBatchOutOfTheQueue) {
  TempDir dir;
  {
    Outbox o({dir.file("spool"), /*memory_windows=*/5, /*spool_max_bytes=*/1 << 20});
    ASSERT_TRUE(o.open());
    for (int i = 0; i < 3; ++i) o.push(batch(i * 5, 5));  // the first two spill to disk
    auto b = o.front();
    ASSERT_TRUE(b);
    std::string kept = o.set_aside(b->seq);
    ASSERT_FALSE(kept.empty());
    EXPECT_TRUE(std::filesystem::exists(kept));
    EXPECT_EQ(std::filesystem::path(kept).parent_path(),
              std::filesystem::path(dir.file("spool")) / "refused");
    EXPECT_EQ(o.refused_windows(), 5u);
    EXPECT_EQ(o.dropped_windows(), 0u);
    EXPECT_EQ(o.pending_windows(), 10u);
    auto next = o.front();
    ASSERT_TRUE(next);
    EXPECT_EQ(first_start(*next), 5 * 1'000'000'000LL);
    EXPECT_EQ(o.set_aside(b->seq), "");  // no longer at the front: nothing happens
    EXPECT_EQ(o.refused_windows(), 5u);
    o.spill_all();
  }
  Outbox again({dir.file("spool"), 5, 1 << 20});
  ASSERT_TRUE(again.open());
  EXPECT_EQ(again.pending_windows(), 10u);  // the refused batch is not delivered again
  auto b = again.front();
  ASSERT_TRUE(b);
  EXPECT_EQ(first_start(*b), 5 * 1'000'000'000LL);
}

TEST(Outbox, SetAsideWithoutSpoolCountsItDropped) {
  Outbox o({"", 100, 0});
  ASSERT_TRUE(o.open());
  o.push(batch(0, 4));
  o.push(batch(4, 4));
  auto b = o.front();
  ASSERT_TRUE(b);
  EXPECT_EQ(o.set_aside(b->seq), "");
  EXPECT_EQ(o.dropped_windows(), 4u);
  EXPECT_EQ(o.pending_windows(), 4u);
}
