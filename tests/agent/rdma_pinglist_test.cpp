// The agent's side of rdma pinglist entries: decoded targets (proto::decode_pinglist refuses
// malformed ones, tests/proto/pinglist_test) go to the engine of their rail, addressed by GID on
// RoCE and by LID on InfiniBand.
#include "agent/rdma_pinglist.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>

using weft::agent::rdma_targets_by_rail;
using weft::proto::PinglistTarget;
using weft::proto::RdmaEndpoint;

namespace {

PinglistTarget entry(const std::string& name, uint32_t rail, uint32_t qpn) {
  RdmaEndpoint e;
  e.device = "rxe0";
  inet_pton(AF_INET6, "::ffff:10.9.0.2", e.gid.data());
  e.gid_index = 1;
  e.qpn = qpn;
  e.qkey = 7;
  return PinglistTarget{name, "10.9.0.2", 0, rail, e};
}

}  // namespace

TEST(AgentRdmaPinglist, GoodEntriesByRail) {
  std::vector<PinglistTarget> ts{entry("h2", 0, 17), entry("h2:rxe1", 1, 18), entry("h3", 0, 19)};
  auto r = rdma_targets_by_rail(ts, 2);
  ASSERT_EQ(r.size(), 2u);
  ASSERT_EQ(r[0].size(), 2u);
  EXPECT_EQ(r[0][1].name, "h3");
  EXPECT_EQ(r[0][1].qpn, 19u);
  EXPECT_EQ(r[0][1].qkey, 7u);
  EXPECT_TRUE(r[0][1].global);
  EXPECT_EQ(std::memcmp(r[0][1].gid.raw, ts[2].rdma->gid.data(), 16), 0);
  ASSERT_EQ(r[1].size(), 1u);
  EXPECT_EQ(r[1][0].qpn, 18u);
  // Entries of a rail the agent does not run are left out, not an error.
  std::vector<PinglistTarget> far{entry("h2", 5, 17)};
  auto r0 = rdma_targets_by_rail(far, 2);
  ASSERT_EQ(r0.size(), 2u);
  EXPECT_TRUE(r0[0].empty() && r0[1].empty());
  // No engines at all: an empty result, whatever the controller sent.
  EXPECT_TRUE(rdma_targets_by_rail(ts, 0).empty());
}

TEST(AgentRdmaPinglist, InfinibandIsReachedByLid) {
  auto t = entry("h2", 0, 17);
  t.rdma->ethernet = false;
  t.rdma->lid = 9;
  std::vector<PinglistTarget> ts{t};
  auto r = rdma_targets_by_rail(ts, 1);
  ASSERT_EQ(r[0].size(), 1u);
  EXPECT_FALSE(r[0][0].global);
  EXPECT_EQ(r[0][0].lid, 9);
}
