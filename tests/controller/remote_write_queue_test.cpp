// RemoteWriteQueue (controller/remote_write_queue.hpp): every accepted window waits until the
// receiver acknowledges it; a failed batch goes back to the front; past the bound the oldest go.
#include "controller/remote_write_queue.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace weft::controller {
namespace {

std::vector<proto::WindowStats> windows(int first, int n) {
  std::vector<proto::WindowStats> out;
  for (int k = first; k < first + n; ++k) {
    proto::WindowStats w;
    w.target = "b";
    w.start_unix_ns = k * 1000;
    w.end_unix_ns = k * 1000 + 1000;
    w.sent = 10;
    w.lost = static_cast<uint64_t>(k % 10);
    out.push_back(w);
  }
  return out;
}

std::vector<int64_t> ends(const std::vector<QueuedWindow>& b) {
  std::vector<int64_t> out;
  for (const auto& w : b) out.push_back(w.end_unix_ns);
  return out;
}

TEST(RemoteWriteQueue, OffKeepsNothing) {
  RemoteWriteQueue q;
  q.enqueue("a", windows(0, 3));
  EXPECT_EQ(q.size(), 0u);
  q.set_enabled(true);
  q.enqueue("a", windows(0, 3));
  EXPECT_EQ(q.size(), 3u);
  q.set_enabled(false);  // turning it off forgets the backlog
  EXPECT_EQ(q.size(), 0u);
}

TEST(RemoteWriteQueue, EveryWindowOfAReportIsQueuedWithItsOwnEnd) {
  RemoteWriteQueue q;
  q.set_enabled(true);
  q.enqueue("a", windows(0, 4));  // a spooled backlog: four windows of one pair
  auto b = q.take(10);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(ends(b), (std::vector<int64_t>{1000, 2000, 3000, 4000}));
  EXPECT_EQ(b[0].src, "a");
  EXPECT_EQ(b[0].dst, "b");
  EXPECT_EQ(b[3].lost, 3u);
  q.acknowledged(b.size());
  EXPECT_EQ(q.size(), 0u);
  EXPECT_EQ(q.stats().acknowledged, 4u);
}

TEST(RemoteWriteQueue, AFailedBatchGoesBackToTheFrontInOrder) {
  RemoteWriteQueue q;
  q.set_enabled(true);
  q.enqueue("a", windows(0, 5));
  auto b = q.take(3);
  EXPECT_EQ(q.size(), 5u);        // taken ones still count until they come back
  q.enqueue("a", windows(5, 1));  // arrives while the push is out
  q.retry(std::move(b));
  auto again = q.take(10);
  EXPECT_EQ(ends(again), (std::vector<int64_t>{1000, 2000, 3000, 4000, 5000, 6000}));
  q.acknowledged(again.size());
  EXPECT_EQ(q.stats().dropped, 0u);
}

TEST(RemoteWriteQueue, PastTheBoundTheOldestAreDroppedAndCounted) {
  RemoteWriteQueue q;
  q.set_enabled(true);
  q.set_capacity(4);
  q.enqueue("a", windows(0, 6));
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(q.stats().dropped, 2u);
  auto b = q.take(2);  // in flight (3000, 4000): not dropped under the writer, but counted in the bound
  q.enqueue("a", windows(6, 1));
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(q.stats().dropped, 3u);  // the oldest waiting one (5000) made room
  q.retry(std::move(b));             // back in front, within the bound
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(ends(q.take(10)), (std::vector<int64_t>{3000, 4000, 6000, 7000}));
}

TEST(RemoteWriteQueue, RejectedWindowsLeaveForGood) {
  RemoteWriteQueue q;
  q.set_enabled(true);
  q.enqueue("a", windows(0, 2));
  auto b = q.take(1);
  q.rejected(b.size());
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.stats().rejected, 1u);
}

}  // namespace
}  // namespace weft::controller
