// The topology: parsing (every refusal names the file, line and reason), ECMP path enumeration and
// mapping traced hops onto paths.
#include "controller/topology.hpp"

#include <gtest/gtest.h>

#include <string>

#include "controller/config.hpp"

using namespace weft;
using namespace weft::controller;

namespace {

// Two racks of three hosts under two spines, with router addresses.
const char* kSmall = R"(spines: [spine1, spine2]
racks:
  - name: rack1
    tor: tor1
    hosts: [h1, h2, h3]
  - name: rack2
    tor: tor2
    hosts: [h4, h5, h6]
routers:
  tor1: [10.60.1.1, 10.60.101.0]
  tor2: [10.60.2.1]
  spine1: [10.60.101.1]
  spine2: [10.60.102.1]
)";

Topology small() {
  auto t = parse_topology_text(kSmall, "topo.yaml");
  EXPECT_TRUE(t) << t.error().message;
  return *t;
}

std::string refusal(const std::string& yaml) {
  auto t = parse_topology_text(yaml, "topo.yaml");
  EXPECT_FALSE(t) << "accepted:\n" << yaml;
  return t ? std::string() : t.error().message;
}

std::vector<std::string> names(const Topology& t, const Path& p) {
  std::vector<std::string> out;
  for (uint32_t e : p) out.push_back(t.element(e).name);
  return out;
}

}  // namespace

TEST(Topology, ImpliesHostAndSpineLinks) {
  const Topology t = small();
  // 2 spines, 2 ToRs, 6 hosts, 6 host links, 4 ToR-spine links.
  EXPECT_EQ(t.elements().size(), 20u);
  EXPECT_EQ(t.host_count(), 6u);
  ASSERT_TRUE(t.find("h1-tor1"));
  ASSERT_TRUE(t.find("tor2-spine1"));
  const Element& l = t.element(*t.find("tor2-spine1"));
  EXPECT_EQ(l.type, ElementType::link);
  EXPECT_EQ(t.element(l.ends[0]).name, "tor2");
  EXPECT_EQ(t.element(l.ends[1]).name, "spine1");
  EXPECT_EQ(t.element(*t.find("h5")).rack, "rack2");
  EXPECT_FALSE(t.host("tor1"));  // a ToR is no host
  EXPECT_FALSE(t.host("h9"));
}

TEST(Topology, PathsAreOnePerSpineAcrossRacksAndOneWithin) {
  const Topology t = small();
  const auto across = t.paths(*t.host("h1"), *t.host("h5"));
  ASSERT_EQ(across.size(), 2u);
  EXPECT_EQ(names(t, across[0]), (std::vector<std::string>{"h1", "h1-tor1", "tor1", "tor1-spine1", "spine1",
                                                           "tor2-spine1", "tor2", "h5-tor2", "h5"}));
  EXPECT_EQ(names(t, across[1])[4], "spine2");
  const auto within = t.paths(*t.host("h1"), *t.host("h3"));
  ASSERT_EQ(within.size(), 1u);
  EXPECT_EQ(names(t, within[0]), (std::vector<std::string>{"h1", "h1-tor1", "tor1", "h3-tor1", "h3"}));
  EXPECT_TRUE(t.paths(*t.host("h1"), *t.host("h1")).empty());
  EXPECT_TRUE(t.paths(*t.host("h1"), *t.find("tor1")).empty());
}

TEST(Topology, ExplicitLinksRenameAndRestrictUplinks) {
  auto t = parse_topology_text(R"(spines: [s1, s2]
racks:
  - {name: r1, tor: t1, hosts: [a]}
  - {name: r2, tor: t2, hosts: [b]}
links:
  - {a: t1, b: s1, name: "ams-t1-up1"}
  - {a: s1, b: t2}
  - {a: t2, b: s2}
  - {a: a, b: t1, name: "a-nic0"}
)",
                               "topo.yaml");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_TRUE(t->find("ams-t1-up1"));
  EXPECT_TRUE(t->find("t2-s1"));  // normalised: ToR first
  EXPECT_TRUE(t->find("a-nic0"));
  EXPECT_FALSE(t->find("t1-s2"));  // not listed: no such cable
  const auto p = t->paths(*t->host("a"), *t->host("b"));
  ASSERT_EQ(p.size(), 1u);  // only s1 joins both
  EXPECT_EQ(names(*t, p[0])[3], "ams-t1-up1");
}

TEST(Topology, RefusesBadInputWithFileLineAndReason) {
  struct Case {
    const char* yaml;
    const char* where;  // "topo.yaml:LINE:"
    const char* why;
  } cases[] = {
      {"spines: [s1]\nracks:\n  - {name: r1, tor: t1, hosts: [a, b]}\n  - {name: r2, tor: t2, hosts: [c, "
       "a]}\n",
       "topo.yaml:4:", "host 'a' is already in rack r1 (line 3)"},
      {"spines: [s1, t1]\nracks:\n  - {name: r1, tor: t1, hosts: [a]}\n",
       "topo.yaml:3:", "a spine cannot also be a tor"},
      {"spines: [s1]\nracks:\n  - {name: r1, tor: t1, hosts: [s1]}\n",
       "topo.yaml:3:", "already the name of a spine"},
      {"spines: [s1]\nracks:\n  - {name: r1, tor: t1, hosts: [a]}\nlinks:\n  - {a: t1, b: s9}\n",
       "topo.yaml:5:", "'s9' is not declared (a link to nowhere)"},
      {"spines: [s1]\nracks:\n  - {name: r1, tor: t1, hosts: [a]}\n  - {name: r2, tor: t2, hosts: "
       "[b]}\nlinks:\n"
       "  - {a: t1, b: t2}\n",
       "topo.yaml:6:", "links join a host to its ToR or a ToR to a spine"},
      {"spines: [s1]\nracks:\n  - {name: r1, tor: t1, hosts: [a]}\n  - {name: r2, tor: t2, hosts: "
       "[b]}\nlinks:\n"
       "  - {a: a, b: t2}\n",
       "topo.yaml:6:", "a loop where a tree is declared"},
      {"spines: [s1]\nracks:\n  - {name: r1, tor: t1, hosts: [a]}\nlinks:\n  - {a: t1, b: s1}\n  - {a: s1, "
       "b: t1}\n",
       "topo.yaml:6:", "declared twice"},
      {"spines: [s1]\nracks:\n  - {name: r1, tor: t1, hosts: [a]}\nlinks:\n  - {a: t1, b: t1}\n",
       "topo.yaml:5:", "to itself"},
      {"spines: [s1, s2]\nracks:\n  - {name: r1, tor: t1, hosts: [a]}\n  - {name: r2, tor: t2, hosts: [b]}\n"
       "links:\n  - {a: t1, b: s1}\n",
       "topo.yaml:4:", "t2 has no link to any spine"},
      {"spines: [s1]\nracks:\n  - {name: r1, tor: t1, hosts: [a]}\nrouters:\n  t9: [10.0.0.1]\n",
       "topo.yaml:5:", "'t9' is not declared"},
      {"spines: [s1]\nracks:\n  - {name: r1, tor: t1, hosts: [a]}\nrouters:\n  a: [10.0.0.1]\n",
       "topo.yaml:5:", "is a host, not a ToR or spine"},
      {"spines: [s1]\nracks:\n  - {name: r1, tor: t1, hosts: [a]}\nrouters:\n  t1: [10.0.0.300]\n",
       "topo.yaml:5:", "expected an IPv4 or IPv6 address"},
      {"spines: [s1]\nracks:\n  - {name: r1, tor: t1, hosts: [a]}\nrouters:\n  t1: [10.0.0.1]\n  s1: "
       "[10.0.0.1]\n",
       "topo.yaml:6:", "already an address of t1"},
      {"spines: [s1]\nracks:\n  - {name: r1, tor: t1, hosts: [a], spine: s1}\n",
       "topo.yaml:3:", "unknown key"},
      {"spines: [s1]\nracks: []\n", "topo.yaml:2:", "non-empty list of racks"},
      {"spines: [s1]\nracks:\n  - {name: r1, tor: t1, hosts: [a]}\n  - {name: r1, tor: t2, hosts: [b]}\n",
       "topo.yaml:4:", "rack 'r1' is declared twice"},
      {"spines: [s1]\nracks:\n  - {name: r1, tor: t1, hosts: [a]}\n  - {name: r2, tor: t2, hosts: [a-t1]}\n",
       "topo.yaml:3:", "'a-t1' is already the name of a host (line 4)"},  // named like a's implied link
      {"spines: [s1]\nracks:\n  - {name: r1, tor: t1, hosts: [\"a b\"]}\n",
       "topo.yaml:3:", "not a host name"},
      {"spines: [s1\nracks: x\n", "topo.yaml:", "YAML syntax error"},
  };
  for (const auto& c : cases) {
    const std::string e = refusal(c.yaml);
    EXPECT_TRUE(e.starts_with(c.where)) << e << "\nfor:\n" << c.yaml;
    EXPECT_NE(e.find(c.why), std::string::npos) << e << "\nfor:\n" << c.yaml;
  }
}

TEST(Topology, HopsMapOntoOnePath) {
  const Topology t = small();
  const uint32_t h1 = *t.host("h1"), h5 = *t.host("h5"), h2 = *t.host("h2");
  auto m = t.match_hops(h1, h5, {"10.60.1.1", "10.60.102.1", "10.60.2.1", "10.0.0.5"});
  EXPECT_EQ(m.kind, HopMatch::Kind::known);
  EXPECT_EQ(t.element(m.spine).name, "spine2");
  // A ToR answering from another of its interfaces is the same router.
  m = t.match_hops(h1, h5, {"10.60.101.0", "10.60.101.1", ""});
  EXPECT_EQ(m.kind, HopMatch::Kind::known);
  EXPECT_EQ(t.element(m.spine).name, "spine1");
  EXPECT_EQ(t.match_hops(h1, h2, {"10.60.1.1"}).kind, HopMatch::Kind::known);
  // No answer, or the spine silent: the path stays unknown (an ECMP mixture).
  EXPECT_EQ(t.match_hops(h1, h5, {}).kind, HopMatch::Kind::unknown);
  EXPECT_EQ(t.match_hops(h1, h5, {"", "", ""}).kind, HopMatch::Kind::unknown);
  EXPECT_EQ(t.match_hops(h1, h5, {"10.60.1.1", "", "10.60.2.1"}).kind, HopMatch::Kind::unknown);
}

TEST(Topology, SpoofedLoopingAndLongHopListsDisagreeWithoutHarm) {
  const Topology t = small();
  const uint32_t h1 = *t.host("h1"), h5 = *t.host("h5");
  auto dis = [&](const std::vector<std::string>& hops, const char* why) {
    const HopMatch m = t.match_hops(h1, h5, hops);
    EXPECT_EQ(m.kind, HopMatch::Kind::disagrees) << why;
    EXPECT_NE(m.disagreement.find(why), std::string::npos) << m.disagreement;
  };
  dis({"10.60.1.1", "192.0.2.7", "10.60.2.1"}, "is no router of the topology");
  dis({"10.60.1.1", "10.60.101.1", "10.60.1.1"}, "a loop");
  dis({"10.60.2.1", "10.60.101.1", "10.60.1.1"}, "the topology says tor1");
  dis({"10.60.1.1", "10.60.2.1"}, "which is no spine");
  dis(std::vector<std::string>(1000, "10.60.1.1"), "1000 hops traced");
  dis({"10.60.1.1", "10.60.101.1", "10.60.2.1", "10.60.102.1"}, "4 router hops");
  dis({"not an address", "", ""}, "is no router");
}

TEST(Topology, ConfigTakesASectionOrAFile) {
  const std::string inline_cfg = std::string("listen: 127.0.0.1:8080\ntopology:\n") + [] {
    std::string s, line;
    for (const char* p = kSmall; *p; ++p) {
      line += *p;
      if (*p == '\n') {
        s += "  " + line;
        line.clear();
      }
    }
    return s;
  }();
  auto c = parse_config(inline_cfg, "weft.yaml");
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_TRUE(c->topology);
  EXPECT_EQ(c->topology->source, "weft.yaml");
  EXPECT_EQ(c->topology->host_count(), 6u);
  // An error inside the section names the config file and its line there.
  auto bad = parse_config(
      "listen: 127.0.0.1:8080\ntopology:\n  spines: [s1]\n  racks:\n    - {name: r1, tor: s1, hosts: [a]}\n",
      "weft.yaml");
  ASSERT_FALSE(bad);
  EXPECT_TRUE(bad.error().message.starts_with("weft.yaml:5:")) << bad.error().message;
  auto missing = parse_config("topology_file: /nonexistent/topo.yaml\n", "weft.yaml");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("cannot read topology /nonexistent/topo.yaml"), std::string::npos)
      << missing.error().message;
  auto both = parse_config("topology_file: x.yaml\ntopology: {}\n", "weft.yaml");
  ASSERT_FALSE(both);
  EXPECT_NE(both.error().message.find("not both"), std::string::npos) << both.error().message;
}
