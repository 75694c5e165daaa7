// Pinglists for protocol rdma: peers' RDMA addresses go into the entries, rails pair engine i with
// engine i, agents without engines neither probe nor are probed, and a new QPN is a new version
// (also through the Mesh's cached pinglists). The agent turns the entries into engine targets.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "controller/mesh.hpp"
#include "controller/pinglist.hpp"
#include "proto/pinglist.hpp"

using namespace weft;
using namespace weft::controller;
using weft::proto::Protocol;

namespace {

Config plan(const std::string& yaml) {
  auto c = parse_config(yaml, "<test>");
  EXPECT_TRUE(c) << (c ? "" : c.error().message);
  return *c;
}

proto::RdmaEndpoint endpoint(int host, uint32_t qpn, const std::string& device = "rxe0") {
  proto::RdmaEndpoint e;
  e.device = device;
  e.gid_index = 1;
  std::string gid = "::ffff:10.9.0." + std::to_string(host);
  inet_pton(AF_INET6, gid.c_str(), e.gid.data());
  e.qpn = qpn;
  return e;
}

// h1..hN, all speaking udp and rdma, each with one RDMA engine (QPN 100 + i).
std::vector<Peer> peers(int n) {
  std::vector<Peer> out;
  for (int i = 1; i <= n; ++i)
    out.push_back({"h" + std::to_string(i),
                   "10.9.0." + std::to_string(i),
                   {Protocol::udp, Protocol::rdma},
                   7777,
                   0,
                   true,
                   {endpoint(i, 100 + static_cast<uint32_t>(i))}});
  return out;
}

const weft::proto::ProtocolPinglist* of(const weft::proto::Pinglist& p, Protocol proto) {
  for (const auto& pp : p.protocols)
    if (pp.protocol == proto) return &pp;
  return nullptr;
}

const char* kMesh =
    "groups:\n  - {name: all, protocols: [udp, rdma], members: ['*']}\nprotocols:\n  rdma: {interval: 20ms, "
    "timeout: 500ms}\n";

}  // namespace

TEST(PinglistRdma, EntriesCarryThePeersAddress) {
  auto cfg = plan(kMesh);
  auto ps = peers(3);
  auto pl = compute_pinglist(cfg, "h1", ps);
  auto* r = of(pl, Protocol::rdma);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->interval, std::chrono::milliseconds(20));
  EXPECT_EQ(r->timeout, std::chrono::milliseconds(500));
  ASSERT_EQ(r->targets.size(), 2u);
  EXPECT_EQ(r->targets[0].name, "h2");
  EXPECT_EQ(r->targets[0].rail, 0u);
  ASSERT_TRUE(r->targets[0].rdma);
  EXPECT_EQ(*r->targets[0].rdma, ps[1].rdma[0]);
  EXPECT_EQ(r->targets[1].rdma->qpn, 103u);
  // The udp entries are as before: no RDMA address in them.
  for (const auto& t : of(pl, Protocol::udp)->targets) EXPECT_FALSE(t.rdma);

  auto j = nlohmann::json::parse(weft::proto::pinglist_json(pl));
  for (const auto& pj : j["protocols"]) {
    if (pj["protocol"] != "rdma") continue;
    EXPECT_EQ(pj["targets"][0]["rdma"]["gid"], "::ffff:10.9.0.2");
    EXPECT_EQ(pj["targets"][0]["rdma"]["qpn"], 102);
    EXPECT_EQ(pj["targets"][0]["rail"], 0);
  }
}

TEST(PinglistRdma, AgentsWithoutEnginesAreNeitherGivenNorTargets) {
  auto cfg = plan(kMesh);
  auto ps = peers(4);
  ps[2].rdma.clear();                 // h3: speaks rdma, but its engine is not running
  ps[3].protocols = {Protocol::udp};  // h4: no rdma at all
  ps[3].rdma.clear();
  auto names = [&](const std::string& self) {
    std::vector<std::string> out;
    auto pl = compute_pinglist(cfg, self, ps);
    if (auto* r = of(pl, Protocol::rdma))
      for (const auto& t : r->targets) out.push_back(t.name);
    return out;
  };
  EXPECT_EQ(names("h1"), std::vector<std::string>{"h2"});
  EXPECT_EQ(names("h2"), std::vector<std::string>{"h1"});
  EXPECT_TRUE(names("h3").empty());
  EXPECT_TRUE(names("h4").empty());
  EXPECT_EQ(of(compute_pinglist(cfg, "h4", ps), Protocol::rdma), nullptr);
}

TEST(PinglistRdma, RailsPairEngineIWithEngineI) {
  auto cfg = plan(kMesh);
  auto ps = peers(3);
  ps[0].rdma.push_back(endpoint(1, 201, "mlx5_1"));  // h1: two rails
  ps[1].rdma.push_back(endpoint(2, 202, "mlx5_1"));  // h2: two rails; h3: one
  auto pl1 = compute_pinglist(cfg, "h1", ps);
  auto* r = of(pl1, Protocol::rdma);
  ASSERT_NE(r, nullptr);
  std::vector<std::pair<std::string, uint32_t>> got;
  for (const auto& t : r->targets) got.emplace_back(t.name, t.rail);
  EXPECT_EQ(got, (std::vector<std::pair<std::string, uint32_t>>{{"h2", 0}, {"h2:mlx5_1", 1}, {"h3", 0}}));
  EXPECT_EQ(r->targets[1].rdma->qpn, 202u);
  // h3 has one engine: it probes rail 0 of the others only.
  auto pl3 = compute_pinglist(cfg, "h3", ps);
  auto* r3 = of(pl3, Protocol::rdma);
  ASSERT_NE(r3, nullptr);
  ASSERT_EQ(r3->targets.size(), 2u);
  EXPECT_EQ(r3->targets[0].rail, 0u);
  EXPECT_EQ(r3->targets[1].rail, 0u);
}

TEST(PinglistRdma, VersionChangesWithAPeersQpnOrGid) {
  auto cfg = plan(kMesh);
  auto ps = peers(3);
  auto v0 = compute_pinglist(cfg, "h1", ps).version;
  EXPECT_EQ(compute_pinglist(cfg, "h1", ps).version, v0);
  ps[1].rdma[0].qpn = 999;  // h2's engine restarted
  auto v1 = compute_pinglist(cfg, "h1", ps).version;
  EXPECT_NE(v1, v0);
  ps[1].rdma[0].gid[15] = 42;
  EXPECT_NE(compute_pinglist(cfg, "h1", ps).version, v1);
  // h1's own address is not in its own pinglist.
  auto v2 = compute_pinglist(cfg, "h1", ps).version;
  ps[0].rdma[0].qpn = 555;
  EXPECT_EQ(compute_pinglist(cfg, "h1", ps).version, v2);
}

TEST(PinglistRdma, MeshRegistrationWithANewQpnChangesPeersPinglists) {
  Mesh mesh(std::make_shared<Config>(plan(kMesh)));
  auto reg = [&](const std::string& name, int host, uint32_t qpn) {
    proto::Registration r{name, {"10.9.0." + std::to_string(host)}, {Protocol::udp, Protocol::rdma}, "", 7777,
                          0};
    r.rdma = {endpoint(host, qpn)};
    mesh.register_agent(r, 1'000'000'000);
  };
  reg("h1", 1, 101);
  reg("h2", 2, 102);
  auto before = mesh.pinglist_for("h1");
  ASSERT_EQ(of(before, Protocol::rdma)->targets.size(), 1u);
  EXPECT_EQ(of(before, Protocol::rdma)->targets[0].rdma->qpn, 102u);
  reg("h2", 2, 102);  // the same address again: nothing changes
  EXPECT_EQ(mesh.pinglist_for("h1").version, before.version);
  reg("h2", 2, 777);  // h2's agent restarted its engine
  auto after = mesh.pinglist_for("h1");
  EXPECT_NE(after.version, before.version);
  EXPECT_EQ(of(after, Protocol::rdma)->targets[0].rdma->qpn, 777u);
  // ... and its engine went away: h2 is no longer an rdma target (udp still is).
  proto::Registration gone{"h2", {"10.9.0.2"}, {Protocol::udp, Protocol::rdma}, "", 7777, 0};
  mesh.register_agent(gone, 1'000'000'000);
  auto none = mesh.pinglist_for("h1");
  EXPECT_TRUE(of(none, Protocol::rdma)->targets.empty());
  EXPECT_EQ(of(none, Protocol::udp)->targets.size(), 1u);
  // The agents API shows what was registered.
  bool seen = false;
  for (const auto& a : mesh.agents()) {
    if (a.name != "h1") continue;
    seen = true;
    EXPECT_EQ(a.rdma, std::vector<proto::RdmaEndpoint>{endpoint(1, 101)});
  }
  EXPECT_TRUE(seen);
}

TEST(PinglistRdma, TheAgentDecodesTheEntriesItWasSent) {
  auto cfg = plan(kMesh);
  auto ps = peers(3);
  ps[0].rdma.push_back(endpoint(1, 201, "mlx5_1"));
  ps[1].rdma.push_back(endpoint(2, 202, "mlx5_1"));
  ps[1].rdma[1].ethernet = false;  // an InfiniBand rail, reached by LID
  ps[1].rdma[1].lid = 9;
  auto sent = compute_pinglist(cfg, "h1", ps);
  // What the agent decodes (proto::decode_pinglist) is what the controller computed, rails and
  // endpoints included; agent/rdma_pinglist_test turns such entries into engine targets.
  auto got = proto::decode_pinglist(weft::proto::pinglist_json(sent));
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_FALSE(got->unchanged);
  EXPECT_EQ(got->pinglist.version, sent.version);
  const proto::ProtocolPinglist* rdma = nullptr;
  for (const auto& pp : got->pinglist.protocols)
    if (pp.protocol == proto::Protocol::rdma) rdma = &pp;
  ASSERT_NE(rdma, nullptr);
  ASSERT_EQ(rdma->targets.size(), 3u);
  EXPECT_EQ(rdma->targets[0].name, "h2");
  EXPECT_EQ(rdma->targets[0].rail, 0u);
  EXPECT_EQ(rdma->targets[0].rdma, ps[1].rdma[0]);
  EXPECT_EQ(rdma->targets[1].name, "h2:mlx5_1");
  EXPECT_EQ(rdma->targets[1].rail, 1u);
  EXPECT_EQ(rdma->targets[1].rdma, ps[1].rdma[1]);
  EXPECT_EQ(rdma->targets[2].name, "h3");
  for (const auto& pp : sent.protocols)
    if (pp.protocol == proto::Protocol::rdma) {
      EXPECT_EQ(pp.targets, rdma->targets);
    }
}
