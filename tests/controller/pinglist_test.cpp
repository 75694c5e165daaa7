#include "controller/pinglist.hpp"

#include <gtest/gtest.h>

using namespace weft::controller;
using weft::proto::Protocol;

namespace {

Config plan(const std::string& yaml) {
  auto c = parse_config(yaml, "<test>");
  EXPECT_TRUE(c) << (c ? "" : c.error().message);
  return *c;
}

std::vector<Peer> peers(std::initializer_list<const char*> names) {
  std::vector<Peer> out;
  int i = 1;
  for (const char* n : names)
    out.push_back({n, "10.0.0." + std::to_string(i++), {Protocol::udp, Protocol::tcp}, 7777, 7778, true});
  return out;
}

std::vector<std::string> names(const weft::proto::Pinglist& p, Protocol proto) {
  std::vector<std::string> out;
  for (const auto& pp : p.protocols)
    if (pp.protocol == proto)
      for (const auto& t : pp.targets) out.push_back(t.name);
  return out;
}

}  // namespace

TEST(Pinglist, FullMeshPerProtocol) {
  auto cfg = plan("groups:\n  - {name: all, protocols: [udp, tcp], members: ['*']}\n");
  auto ps = peers({"h1", "h2", "h3", "h4"});
  for (const auto& self : ps) {
    auto pl = compute_pinglist(cfg, self.name, ps);
    for (auto proto : {Protocol::udp, Protocol::tcp}) {
      auto n = names(pl, proto);
      EXPECT_EQ(n.size(), 3u);
      EXPECT_TRUE(std::is_sorted(n.begin(), n.end()));
      EXPECT_EQ(std::count(n.begin(), n.end(), self.name), 0);
    }
  }
  auto pl = compute_pinglist(cfg, "h1", ps);
  EXPECT_EQ(pl.protocols[0].targets[0].host, "10.0.0.2");
  EXPECT_EQ(pl.protocols[0].targets[0].port, 7777);
}

TEST(Pinglist, DownAgentsAndUnsupportedProtocolsAreLeftOut) {
  auto cfg = plan("groups:\n  - {name: all, protocols: [udp, tcp], members: ['*']}\n");
  auto ps = peers({"h1", "h2", "h3"});
  ps[1].up = false;
  ps[2].protocols = {Protocol::udp};
  auto pl = compute_pinglist(cfg, "h1", ps);
  EXPECT_EQ(names(pl, Protocol::udp), std::vector<std::string>{"h3"});
  EXPECT_TRUE(names(pl, Protocol::tcp).empty());
}

TEST(Pinglist, ArrowsAreOneWay) {
  auto cfg = plan("arrows:\n  - {name: web-db, protocols: [udp], from: 'web-*', to: 'db-*'}\n");
  auto ps = peers({"db-1", "db-2", "web-1", "web-2"});
  EXPECT_EQ(names(compute_pinglist(cfg, "web-1", ps), Protocol::udp),
            (std::vector<std::string>{"db-1", "db-2"}));
  EXPECT_TRUE(names(compute_pinglist(cfg, "db-1", ps), Protocol::udp).empty());
}

TEST(Pinglist, GroupsOnlyMeshTheirMembers) {
  auto cfg = plan(
      "groups:\n  - {name: r1, protocols: [udp], members: ['r1-*']}\n  - {name: r2, protocols: [tcp], "
      "members: ['r2-*']}\n");
  auto ps = peers({"r1-a", "r1-b", "r2-a", "r2-b"});
  auto pl = compute_pinglist(cfg, "r1-a", ps);
  EXPECT_EQ(names(pl, Protocol::udp), std::vector<std::string>{"r1-b"});
  EXPECT_TRUE(names(pl, Protocol::tcp).empty());
}

TEST(Pinglist, VersionIsAFunctionOfContent) {
  auto cfg = plan("groups:\n  - {name: all, protocols: [udp], members: ['*']}\n");
  auto ps = peers({"h1", "h2", "h3"});
  auto a = compute_pinglist(cfg, "h1", ps), b = compute_pinglist(cfg, "h1", ps);
  EXPECT_EQ(a.version, b.version);
  EXPECT_NE(a.version, 0u);
  ps[2].up = false;
  EXPECT_NE(compute_pinglist(cfg, "h1", ps).version, a.version);
  ps[2].up = true;
  EXPECT_EQ(compute_pinglist(cfg, "h1", ps).version, a.version);
  EXPECT_TRUE(compute_pinglist(cfg, "stranger", ps).protocols.empty());
}
