// The AF_XDP device's UMEM frame bookkeeping (stack/dev/umem_frames.hpp), without a socket: which
// frames the fill ring gets, which transmit frames are free, and what the completion ring may
// give back.
#include "stack/dev/umem_frames.hpp"

#include <gtest/gtest.h>

#include <set>

using weft::stack::UmemFrames;

TEST(UmemFrames, ReceiveFramesComeFirstAndTransmitFramesFollow) {
  UmemFrames f(8, 4096, 4);
  EXPECT_EQ(f.rx_count(), 4u);
  EXPECT_EQ(f.rx_addr(0), 0u);
  EXPECT_EQ(f.rx_addr(3), 3u * 4096);
  std::set<uint64_t> tx;
  while (auto a = f.take()) tx.insert(*a);
  EXPECT_EQ(tx, (std::set<uint64_t>{4 * 4096, 5 * 4096, 6 * 4096, 7 * 4096}));
  EXPECT_EQ(f.free_count(), 0u);
  EXPECT_EQ(f.in_flight(), 4u);
}

TEST(UmemFrames, CompletionsMakeFramesFreeAgain) {
  UmemFrames f(8, 4096, 4);
  const uint64_t a = *f.take();
  const uint64_t b = *f.take();
  EXPECT_NE(a, b);
  EXPECT_EQ(f.free_count(), 2u);
  EXPECT_TRUE(f.give_back(b));
  EXPECT_TRUE(f.give_back(a));
  EXPECT_EQ(f.free_count(), 4u);
  EXPECT_EQ(f.in_flight(), 0u);
  EXPECT_EQ(*f.take(), a);  // last given back, first taken: the frame still warm in cache
}

TEST(UmemFrames, AnAddressInsideAFrameNamesThatFrame) {
  UmemFrames f(8, 4096, 4);
  EXPECT_EQ(f.frame_of(2 * 4096 + 256), 2u * 4096);  // an RX descriptor after copy mode's headroom
  const uint64_t a = *f.take();
  EXPECT_TRUE(f.give_back(a + 100));
  EXPECT_EQ(*f.take(), a);
}

TEST(UmemFrames, RefusesWhatIsNoFreeableTransmitFrame) {
  UmemFrames f(8, 4096, 4);
  EXPECT_FALSE(f.give_back(0));         // a receive frame
  EXPECT_FALSE(f.give_back(8 * 4096));  // past the UMEM
  EXPECT_FALSE(f.give_back(5 * 4096));  // all transmit frames are free already
  EXPECT_EQ(f.free_count(), 4u);
  const uint64_t a = *f.take();
  EXPECT_TRUE(f.give_back(a));
  EXPECT_FALSE(f.give_back(a));  // twice
  EXPECT_EQ(f.free_count(), 4u);
}

TEST(UmemFrames, MoreReceiveFramesThanFramesLeavesNoneForTransmit) {
  UmemFrames f(4, 2048, 10);
  EXPECT_EQ(f.rx_count(), 4u);
  EXPECT_FALSE(f.take().has_value());
}
