// Issue 25, the store when it fails: liveness comes from the agents' own contact, not from the
// store. The sweep must not mark down an agent whose report is still being written (a store that
// takes seconds to fail), nor, for silence the replica feed could not carry, an agent a replica
// knows only through the feed (the feed runs through the store). A registration that repeats
// what the controller holds needs nothing kept (taken while the store is away).
#include <gtest/gtest.h>

#include <climits>

#include "controller/config.hpp"
#include "controller/mesh.hpp"
#include "proto/registration.hpp"

using namespace weft::controller;

namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t t0 = 1'800'000'000 * kSecond;

weft::proto::Registration reg(const std::string& name, const std::string& address) {
  return weft::proto::Registration{name, {address}, {weft::proto::Protocol::udp}, "v-test", 7777, 0};
}

std::shared_ptr<const Config> config_down_after_5s() {
  auto c = parse_config("agent_down_after: 5s\ngroups:\n  - {name: all, protocols: [udp], members: ['*']}\n",
                        "<test>");
  EXPECT_TRUE(c) << c.error().message;
  return std::make_shared<const Config>(*c);
}

}  // namespace

TEST(StoreOutageLiveness, AReportInProgressKeepsItsAgentUp) {
  Mesh mesh(config_down_after_5s());
  mesh.register_agent(reg("h1", "10.0.0.1"), t0);
  mesh.register_agent(reg("h2", "10.0.0.2"), t0);
  mesh.report_started("h1", t0 + 1 * kSecond);  // its store write hangs on
  EXPECT_EQ(mesh.sweep(t0 + 9 * kSecond), std::vector<std::string>{"h2"});
  mesh.report_done("h1");
  EXPECT_EQ(mesh.sweep(t0 + 9 * kSecond), std::vector<std::string>{"h1"});
}

TEST(StoreOutageLiveness, SilenceTheFeedCouldNotCarryIsNotCounted) {
  Mesh mesh(config_down_after_5s());
  mesh.register_agent(reg("here", "10.0.0.1"), t0);
  mesh.register_agent(reg("there", "10.0.0.2"), t0);
  const weft::proto::Health h{};
  mesh.touch("here", h, {}, t0 + 1 * kSecond);
  mesh.touch("there", h, {}, t0 + 1 * kSecond, /*via_feed=*/true);
  // The feed fails: the agent reporting here is swept as usual, the one heard of through the feed not.
  EXPECT_EQ(mesh.sweep(t0 + 7 * kSecond, INT64_MAX), std::vector<std::string>{"here"});
  // The feed is read again from t0 + 10 s: its silence counts from then.
  EXPECT_TRUE(mesh.sweep(t0 + 14 * kSecond, t0 + 10 * kSecond).empty());
  EXPECT_EQ(mesh.sweep(t0 + 16 * kSecond, t0 + 10 * kSecond), std::vector<std::string>{"there"});
}

TEST(StoreOutageLiveness, ARegistrationIsHeldOnlyWhenNothingChanged) {
  Mesh mesh(config_down_after_5s());
  EXPECT_FALSE(mesh.holds_registration(reg("h1", "10.0.0.1")));
  mesh.register_agent(reg("h1", "10.0.0.1"), t0);
  EXPECT_TRUE(mesh.holds_registration(reg("h1", "10.0.0.1")));
  EXPECT_FALSE(mesh.holds_registration(reg("h1", "10.0.0.9")));
  auto other_port = reg("h1", "10.0.0.1");
  other_port.udp_port = 7000;
  EXPECT_FALSE(mesh.holds_registration(other_port));
  auto other_version = reg("h1", "10.0.0.1");
  other_version.version = "v-next";
  EXPECT_FALSE(mesh.holds_registration(other_version));
}
