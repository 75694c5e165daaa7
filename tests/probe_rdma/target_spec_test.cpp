#include "probe/rdma/target_spec.hpp"

#include <gtest/gtest.h>

using namespace weft::probe;

TEST(RdmaTargetSpec, ParsesGidLidAndHost) {
  auto g = parse_rdma_target("rxe0:::ffff:10.9.0.2");
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(g->device, "rxe0");
  EXPECT_EQ(g->kind, RdmaTargetSpec::Kind::gid);
  EXPECT_EQ(g->gid.raw[10], 0xff);
  EXPECT_EQ(g->gid.raw[12], 10);
  EXPECT_EQ(g->gid.raw[15], 2);
  auto full = parse_rdma_target("mlx5_0:fe80:0000:0000:0000:0202:c9ff:fe00:0001");
  ASSERT_TRUE(full);
  EXPECT_EQ(full->gid.raw[0], 0xfe);
  auto l = parse_rdma_target("mlx5_1:lid:17");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->kind, RdmaTargetSpec::Kind::lid);
  EXPECT_EQ(l->lid, 17);
  auto lx = parse_rdma_target("mlx5_1:lid:0x11");
  ASSERT_TRUE(lx);
  EXPECT_EQ(lx->lid, 17);
  auto h = parse_rdma_target("rxe0:10.9.0.2");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->kind, RdmaTargetSpec::Kind::host);
  EXPECT_EQ(h->host, "10.9.0.2");
  auto n = parse_rdma_target("rxe0:node-7.example");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->host, "node-7.example");
}

TEST(RdmaTargetSpec, RejectsMalformed) {
  for (const char* bad : {"", "rxe0", ":::1", "rxe0:", "rx e0:10.0.0.1", "rxe0:lid:0", "rxe0:lid:49152",
                          "rxe0:lid:x", "rxe0:lid:", "rxe0:zz::zz::1", "rxe0:lid:5x"}) {
    auto r = parse_rdma_target(bad);
    EXPECT_FALSE(r) << bad;
    if (!r) {
      EXPECT_FALSE(r.error().message.empty());
    }
  }
}
