// The probe engine's receive ring sizing (src/probe/rdma/recv_ring.hpp).
#include "probe/rdma/recv_ring.hpp"

#include <gtest/gtest.h>

namespace weft::probe {
namespace {

TEST(RdmaRecvRing, FloorForFewPeers) {
  EXPECT_EQ(recv_ring_for_peers(0, kRecvPerPeer, 0, 16384), kRecvFloor);
  EXPECT_EQ(recv_ring_for_peers(1, kRecvPerPeer, 1, 16384), kRecvFloor);
  EXPECT_EQ(recv_ring_for_peers(kRecvFloor / kRecvPerPeer, kRecvPerPeer, 0, 16384), kRecvFloor);
}

TEST(RdmaRecvRing, PerTargetCoversEveryProbeWithinItsTimeout) {
  constexpr int64_t ms = 1'000'000;
  // 100 ms interval, 1 s timeout: up to 11 probes in flight, two answers each.
  EXPECT_EQ(recv_per_target(100 * ms, 1000 * ms, 16384), 22u);
  // Slow probing still gets the per-peer minimum.
  EXPECT_EQ(recv_per_target(1000 * ms, 1000 * ms, 16384), kRecvPerPeer);
  // A burst (1 us interval, 20 s timeout) needs the whole queue.
  EXPECT_EQ(recv_per_target(1000, 20'000 * ms, 4096), 4096u);
  EXPECT_EQ(recv_per_target(0, 1000 * ms, 4096), 4096u);
}

TEST(RdmaRecvRing, GrowsWithPeersInWholeChunks) {
  const uint32_t r = recv_ring_for_peers(kRecvFloor / kRecvPerPeer + 1, kRecvPerPeer, 0, 16384);
  EXPECT_GT(r, kRecvFloor);
  EXPECT_EQ(r % kRecvChunk, 0u);
  EXPECT_GE(r, (kRecvFloor / kRecvPerPeer + 1) * kRecvPerPeer);
  // An agent probing 100 others (100 ms / 1 s) and probed by them: 100 x 22 + 100 x 16 = 3,800.
  EXPECT_EQ(recv_ring_for_peers(100, 22, 100, 16384), 3840u);
}

TEST(RdmaRecvRing, NeverAboveCapacity) {
  EXPECT_EQ(recv_ring_for_peers(100000, kRecvPerPeer, 0, 16384), 16384u);
  EXPECT_EQ(recv_ring_for_peers(0, 0, 100000, 16384), 16384u);
  EXPECT_EQ(recv_ring_for_peers(0, 0, 0, 100), 100u);  // a device smaller than the floor
}

TEST(RdmaRecvRing, DoublesWhenADrainTookMoreThanHalf) {
  EXPECT_EQ(recv_ring_after_drain(512, 0, 16384), 512u);
  EXPECT_EQ(recv_ring_after_drain(512, 256, 16384), 512u);
  EXPECT_EQ(recv_ring_after_drain(512, 257, 16384), 1024u);
  EXPECT_EQ(recv_ring_after_drain(512, 512, 16384), 1024u);
  EXPECT_EQ(recv_ring_after_drain(12288, 12000, 16384), 16384u);
  EXPECT_EQ(recv_ring_after_drain(16384, 16384, 16384), 16384u);
}

}  // namespace
}  // namespace weft::probe
