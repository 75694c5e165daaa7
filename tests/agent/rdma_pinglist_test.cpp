// The agent's side of rdma pinglist entries: a malformed entry fails the whole list with a
// message saying which entry and field, so that a half-understood pinglist is never probed.
#include "agent/rdma_pinglist.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

using nlohmann::json;
using weft::agent::rdma_targets_by_rail;

namespace {

json entry(const std::string& name, uint32_t rail, uint32_t qpn) {
  return json{{"name", name},
              {"host", "10.9.0.2"},
              {"port", 0},
              {"rail", rail},
              {"rdma",
               {{"device", "rxe0"},
                {"port", 1},
                {"gid", "::ffff:10.9.0.2"},
                {"gid_index", 1},
                {"lid", 0},
                {"qpn", qpn},
                {"qkey", 7}}}};
}

std::string error_of(const json& targets) {
  auto r = rdma_targets_by_rail(targets, 2);
  EXPECT_FALSE(r) << targets.dump();
  return r ? std::string() : r.error().message;
}

}  // namespace

TEST(AgentRdmaPinglist, GoodEntriesByRail) {
  auto r =
      rdma_targets_by_rail(json::array({entry("h2", 0, 17), entry("h2:rxe1", 1, 18), entry("h3", 0, 19)}), 2);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  ASSERT_EQ((*r)[0].size(), 2u);
  EXPECT_EQ((*r)[0][1].name, "h3");
  EXPECT_EQ((*r)[0][1].qpn, 19u);
  EXPECT_EQ((*r)[0][1].qkey, 7u);
  ASSERT_EQ((*r)[1].size(), 1u);
  EXPECT_EQ((*r)[1][0].qpn, 18u);
  // Entries of a rail the agent does not run are left out, not an error.
  auto r0 = rdma_targets_by_rail(json::array({entry("h2", 5, 17)}), 2);
  ASSERT_TRUE(r0);
  EXPECT_TRUE((*r0)[0].empty() && (*r0)[1].empty());
  // No engines at all: an empty result, whatever the controller sent.
  auto none = rdma_targets_by_rail(json::array({entry("h2", 0, 17)}), 0);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST(AgentRdmaPinglist, MalformedEntriesFailTheList) {
  EXPECT_EQ(error_of(json::object()), "rdma targets: expected a list");
  EXPECT_EQ(error_of(json::array({7})), "rdma targets[0]: expected an object");
  auto e = entry("h2", 0, 17);
  e.erase("rdma");
  EXPECT_EQ(error_of(json::array({entry("h3", 0, 17), e})), "rdma targets[1] (h2): no rdma address");
  e = entry("h2", 0, 1);
  EXPECT_EQ(error_of(json::array({e})), "rdma targets[0].rdma: qpn: 1 is out of range [2, 16777215]");
  e = entry("", 0, 17);
  EXPECT_EQ(error_of(json::array({e})), "rdma targets[0].name: required, 1 to 128 bytes");
  e = entry("h2", 0, 17);
  e["rail"] = -1;
  EXPECT_EQ(error_of(json::array({e})), "rdma targets[0].rail: expected an unsigned integer");
  e = entry("h2", 0, 17);
  e["rdma"]["gid"] = "not-a-gid";
  EXPECT_EQ(error_of(json::array({e})),
            "rdma targets[0].rdma: gid: required, an IPv6 address text (e.g. ::ffff:10.0.0.1)");
}
