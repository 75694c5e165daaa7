// Fault localisation over a small simulated Clos (3 racks of 4 hosts, 2 spines, K = 8 flows per
// pair): the right element is named and no innocent one, host faults stay apart from their links,
// flapping paths are not blamed, and made-up traceroute answers do no harm. Also the JSON answers.
#include "controller/localise.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>

#include "controller/element_watch.hpp"
#include "controller/sim/clos_sim.hpp"

using namespace weft;
using namespace weft::controller;

namespace {

constexpr int64_t kNow = 1'800'000'000'000'000'000;
constexpr int64_t kWindow = 10'000'000'000;

struct Tree {
  sim::ClosSpec spec;
  Topology topo;
  Tree() {
    spec.racks = 3;
    spec.hosts_per_rack = 4;
    spec.spines = 2;
    // A small tree has few pairs over each element: more probes per pair than an agent sends in one
    // window (100) give each element the evidence a 1,024-host fleet's many pairs would.
    spec.probes_per_pair = 1000;
    auto t = parse_topology_text(sim::clos_yaml(spec), "sim");
    EXPECT_TRUE(t) << t.error().message;
    topo = std::move(*t);
  }
  uint32_t id(const std::string& name) const { return *topo.find(name); }
  // The spine a flow's traced hops cross (kNoElement within a rack or when not known).
  uint32_t spine_of(const FlowObservation& f) const {
    return topo.match_hops(*topo.host(f.src), *topo.host(f.dst), f.hops).spine;
  }
  // The hops of another flow of f's pair over `spine` (empty: none): where f goes while it flaps.
  std::vector<std::string> pair_hops_over(const std::vector<FlowObservation>& flows, const FlowObservation& f,
                                          uint32_t spine) const {
    for (const auto& g : flows)
      if (g.src == f.src && g.dst == f.dst && spine_of(g) == spine) return g.hops;
    return {};
  }
  // Marks f flapping between its path and its pair's path over `detour` (empty: no flow of its
  // pair crosses it; then false), its current path its held home when `home`.
  bool flap(FlowObservation& f, const std::vector<FlowObservation>& flows, uint32_t detour, bool home) const {
    f.other_hops = pair_hops_over(flows, f, detour);
    if (f.other_hops.empty()) return false;
    if (home) f.home_hops = f.hops;
    f.path_flapping = true;
    return true;
  }
  std::vector<FlowObservation> probe(const std::vector<sim::Fault>& faults, uint64_t seed = 7,
                                     int64_t end = kNow) {
    std::mt19937_64 rng(seed);
    return sim::simulate(topo, spec, faults, end, rng).flows;
  }
};

std::set<std::string> named(const Localisation& l) {
  std::set<std::string> out;
  for (const auto& s : l.elements) out.insert(s.name);
  return out;
}

}  // namespace

TEST(Localise, HealthyNetworkNamesNothing) {
  Tree t;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    LocaliserState st;
    const auto l = localise(t.topo, t.probe({}, seed), kNow, st);
    EXPECT_TRUE(l.elements.empty()) << l.elements[0].name << " score " << l.elements[0].score;
    EXPECT_GT(l.flows, 0u);
    EXPECT_EQ(l.flows_known_path, l.flows);
  }
}

TEST(Localise, LossOnASharedSpineLinkNamesThatLinkAndNoHost) {
  Tree t;
  LocaliserState st;
  const auto l = localise(t.topo, t.probe({{t.id("tor1-spine1"), 0, 0.03, 0}}), kNow, st);
  ASSERT_FALSE(l.elements.empty());
  EXPECT_EQ(named(l), std::set<std::string>{"tor1-spine1"});
  const auto& s = l.elements[0];
  EXPECT_EQ(s.type, ElementType::link);
  EXPECT_EQ(s.reason, "loss");
  EXPECT_EQ(s.detail, "tor1 -> spine1");
  EXPECT_GT(s.loss_ratio, 0.015);
  EXPECT_LT(s.loss_ratio, 0.06);
  EXPECT_GT(s.confidence, 0.5);
  EXPECT_EQ(s.since_unix_ns, kNow);
  EXPECT_GT(s.evidence.flows, 0u);
  EXPECT_GT(s.evidence.bad_flows, 0u);
  EXPECT_LE(s.evidence.bad_flows, s.evidence.flows);
  EXPECT_GT(s.evidence.pairs, 0u);
  ASSERT_FALSE(s.evidence.examples.empty());
  EXPECT_NE(s.evidence.examples[0].find(" lost"), std::string::npos) << s.evidence.examples[0];
}

// A congested ToR drops in bursts that a prober's probes share (it sends to its targets
// together): one host's probes lose more than another's in the same window. That is the ToR's
// doing, not the hosts': the ToR is named, no host under it (the Clos lab's congested_tor named
// a host under the ToR as prober in 2-9 of ~250 polls; its hosts' totals strayed by 10-15 % from
// one another in a window, the spread here is 20 %).
TEST(Localise, ACongestedTorsBurstsNameTheTorAndNoHostUnderIt) {
  Tree t;
  t.spec.burst_sigma = 0.2;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    LocaliserState st;
    const auto l = localise(t.topo, t.probe({{t.id("tor3"), 0, 0.12, 0}}, seed), kNow, st);
    ASSERT_FALSE(l.elements.empty()) << "seed " << seed;
    EXPECT_EQ(l.elements[0].name, "tor3")
        << "seed " << seed << ": " << l.elements[0].name << " " << l.elements.size();
    for (const auto& s : l.elements)
      EXPECT_NE(s.type, ElementType::host) << "seed " << seed << ": " << s.name << " (" << s.detail
                                           << ", score " << s.score << ", loss " << s.loss_ratio << ")";
  }
}

// Bursts do not hide a host that does lose: a prober that drops 5 % of its answers beside the
// congested ToR is still named as the host.
TEST(Localise, AHostThatLosesIsNamedBesideACongestedTor) {
  Tree t;
  t.spec.burst_sigma = 0.2;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    LocaliserState st;
    const auto l =
        localise(t.topo, t.probe({{t.id("tor3"), 0, 0.12, 0}, {t.id("r1h2"), 0, 0.05, 0}}, seed), kNow, st);
    const auto n = named(l);
    EXPECT_TRUE(n.contains("tor3")) << "seed " << seed;
    EXPECT_TRUE(n.contains("r1h2")) << "seed " << seed;
  }
}

TEST(Localise, PairsWithoutTracesBlameNoHostForASpineLink) {
  Tree t;
  t.spec.traced = false;  // one observation per pair, path unknown: an ECMP mixture
  LocaliserState st;
  const auto l = localise(t.topo, t.probe({{t.id("tor1-spine1"), 0, 0.05, 0}}), kNow, st);
  EXPECT_EQ(l.flows_known_path, 0u);
  for (const auto& s : l.elements) EXPECT_NE(s.type, ElementType::host) << s.name;
}

TEST(Localise, AHostFaultIsTheHostAndItsLinkIsTheLink) {
  Tree t;
  {
    LocaliserState st;  // the responder of r2h1 drops 5 % of the probes to it
    const auto l = localise(t.topo, t.probe({{t.id("r2h1"), 1, 0.05, 0}}), kNow, st);
    EXPECT_EQ(named(l), std::set<std::string>{"r2h1"});
    ASSERT_FALSE(l.elements.empty());
    EXPECT_EQ(l.elements[0].type, ElementType::host);
    EXPECT_EQ(l.elements[0].detail, "probes to it (as responder)");
  }
  {
    LocaliserState st;  // the cable under it drops 5 % towards the ToR
    const auto l = localise(t.topo, t.probe({{t.id("r2h1-tor2"), 0, 0.05, 0}}), kNow, st);
    EXPECT_EQ(named(l), std::set<std::string>{"r2h1-tor2"});
  }
  {
    LocaliserState st;  // a slow responder: its own time, not the network's
    const auto l = localise(t.topo, t.probe({{t.id("r3h4"), 1, 0, 2'000'000}}), kNow, st);
    EXPECT_EQ(named(l), std::set<std::string>{"r3h4"});
    ASSERT_FALSE(l.elements.empty());
    EXPECT_EQ(l.elements[0].reason, "latency");
    EXPECT_GT(l.elements[0].extra_latency_ns, 1'500'000);
  }
}

TEST(Localise, TheHostsUnderASlowTorAreNotNamedForTheDelayTheirProbesSawFirst) {
  // tor3's queues are filling: every flow through it is 5 ms slower so far, and the flows from
  // rack 3's hosts, whose windows closed later than the others', show 30 ms more (the agents
  // report at different moments). The fit could put the extra on the three hosts as probers; every one of
  // their rows crosses tor3, so nothing tells them from it (the Clos lab named all three with the
  // congested ToR, +19 ms each).
  Tree t;
  auto flows = t.probe({{t.id("tor3"), 0, 0, 5'000'000}});
  size_t bumped = 0;
  for (auto& f : flows)
    if (f.src.starts_with("r3") && f.rtt_p50_ns > 0) {
      f.rtt_p50_ns += 30'000'000;
      ++bumped;
    }
  ASSERT_GT(bumped, 10u);
  LocaliserState st;
  const auto l = localise(t.topo, flows, kNow, st);
  EXPECT_EQ(named(l).count("tor3"), 1u);
  for (const auto& s : l.elements)
    EXPECT_NE(s.type, ElementType::host) << s.name << " " << s.reason << " " << s.detail;
}

TEST(Localise, TwoSimultaneousFaults) {
  Tree t;
  LocaliserState st;
  const auto l = localise(
      t.topo, t.probe({{t.id("spine2"), 0, 0, 1'000'000}, {t.id("r3h2-tor3"), 1, 0.04, 0}}), kNow, st);
  EXPECT_EQ(named(l), (std::set<std::string>{"spine2", "r3h2-tor3"}));
  for (const auto& s : l.elements) {
    if (s.name == "spine2") {
      EXPECT_EQ(s.reason, "latency");
      EXPECT_GT(s.extra_latency_ns, 700'000);
      EXPECT_LT(s.extra_latency_ns, 1'300'000);
    }
  }
}

TEST(Localise, FlappingPathIsShownNotBlamed) {
  Tree t;
  auto flows = t.probe({});
  size_t marked = 0;
  for (auto& f : flows)
    if (f.src == "r1h1" && f.dst.starts_with("r2")) {  // its paths to rack 2 change every probe
      f.path_flapping = true;
      f.lost = f.sent / 2;
      ++marked;
    }
  ASSERT_GT(marked, 0u);
  LocaliserState st;
  const auto l = localise(t.topo, flows, kNow, st);
  EXPECT_EQ(l.flows_flapping, marked);
  ASSERT_EQ(l.elements.size(), 1u) << l.elements[0].name;
  EXPECT_EQ(l.elements[0].reason, "flapping");
  EXPECT_EQ(l.elements[0].loss_ratio, 0);
  EXPECT_EQ(l.elements[0].evidence.flows, marked);
}

TEST(Localise, AFlappingCableIsWhereTheFlappingPathsDiffer) {
  // tor3-spine2 goes down and up: the flows of rack 3 that hash onto spine2 move to spine1 and
  // back. Every one of them crosses tor3, but what they have in common only where their two paths
  // differ is the cable (and spine1/spine2/tor3-spine1, which steady flows cross too).
  Tree t;
  auto flows = t.probe({});
  const uint32_t spine1 = t.id("spine1"), spine2 = t.id("spine2");
  size_t marked = 0;
  for (auto& f : flows) {
    const bool rack3 = f.src.starts_with("r3") != f.dst.starts_with("r3");
    if (!rack3 || t.spine_of(f) != spine2) continue;
    f.other_hops = t.pair_hops_over(flows, f, spine1);  // where this flow goes meanwhile
    ASSERT_FALSE(f.other_hops.empty()) << f.src << " -> " << f.dst << " has no flow over spine1";
    f.path_flapping = true;
    ++marked;
  }
  ASSERT_GT(marked, 4u);
  LocaliserState st;
  const auto l = localise(t.topo, flows, kNow, st);
  EXPECT_EQ(l.flows_flapping, marked);
  ASSERT_EQ(l.elements.size(), 1u) << l.elements[0].name;
  EXPECT_EQ(l.elements[0].name, "tor3-spine2");
  EXPECT_EQ(l.elements[0].reason, "flapping");
}

TEST(Localise, AFlappingCableIsOnItsFlowsHomePathThoughStaleTracesPutSteadyFlowsOnIt) {
  // tor3-spine2 flaps after spine1 died and came back: rack 3's flows that hash onto spine1 were
  // traced over spine2 while spine1 was dead and went back unseen (no loss, no new trace), so the
  // steady flows the controller places on tor3-spine2 are stale ones. The flapping flows know their
  // home path (spine2, held before the flapping began): only the home side gets their votes.
  Tree t;
  auto flows = t.probe({});
  const uint32_t spine1 = t.id("spine1"), spine2 = t.id("spine2");
  const auto original = flows;
  size_t marked = 0, stale = 0, k = 0;
  for (auto& f : flows) {
    const bool rack3 = f.src.starts_with("r3") != f.dst.starts_with("r3");
    if (!rack3) continue;
    if (t.spine_of(f) == spine1) {
      auto over2 = t.pair_hops_over(original, f, spine2);
      if (!over2.empty()) {
        f.hops = std::move(over2);
        ++stale;
      }
      continue;
    }
    auto over1 = t.pair_hops_over(original, f, spine1);
    ASSERT_FALSE(over1.empty()) << f.src << " -> " << f.dst << " has no flow over spine1";
    f.home_hops = f.hops;
    if (k++ % 2) {  // caught on the detour right now
      f.other_hops = f.hops;
      f.hops = over1;
    } else {
      f.other_hops = over1;
    }
    f.path_flapping = true;
    ++marked;
  }
  ASSERT_GT(marked, 4u);
  ASSERT_GT(stale, 4u);
  LocaliserState st;
  const auto l = localise(t.topo, flows, kNow, st);
  EXPECT_EQ(l.flows_flapping, marked);
  ASSERT_EQ(l.elements.size(), 1u) << l.elements[0].name;
  EXPECT_EQ(l.elements[0].name, "tor3-spine2");
  EXPECT_EQ(l.elements[0].reason, "flapping");
}

TEST(Localise, WhenOnlyOneRackPairFlapsNeitherEndOfItsHomePathIsNamed) {
  // tor3-spine2 flaps, but so far only the flows between rack 1 and rack 3 have been traced
  // flapping (rack 2's have not been traced since). Every one of them leaves its home path over
  // tor1-spine2, spine2 and tor3-spine2 alike: the two cables are crossed by the same flapping
  // flows and by steady ones too, so nothing separates them. Fewer steady flows happened to be
  // seen over tor1-spine2 this interval (the Clos lab named it, the innocent end, for 6 polls):
  // naming the one with fewer steady flows would be a coin toss, so neither is named yet.
  Tree t;
  auto flows = t.probe({});
  const uint32_t spine1 = t.id("spine1"), spine2 = t.id("spine2");
  const auto original = flows;
  std::vector<FlowObservation> seen;
  size_t marked = 0, k = 0;
  for (auto f : flows) {
    const bool r1 = f.src.starts_with("r1") || f.dst.starts_with("r1");
    const bool r2 = f.src.starts_with("r2") || f.dst.starts_with("r2");
    const bool r3 = f.src.starts_with("r3") || f.dst.starts_with("r3");
    if (r1 && r2 && t.spine_of(f) == spine2 && (k++ % 2) == 0) continue;  // not seen this interval
    if (r1 && r3 && t.spine_of(f) == spine2) {
      ASSERT_TRUE(t.flap(f, original, spine1, true))
          << f.src << " -> " << f.dst << " has no flow over spine1";
      ++marked;
    }
    seen.push_back(std::move(f));
  }
  ASSERT_GT(marked, 4u);
  LocaliserState st;
  const auto l = localise(t.topo, seen, kNow, st);
  EXPECT_EQ(l.flows_flapping, marked);
  EXPECT_EQ(named(l).count("tor1-spine2"), 0u);
  EXPECT_TRUE(l.elements.empty()) << l.elements[0].name << ": " << l.elements[0].detail;

  // Rack 2's flows over the cable are traced flapping too: now only tor3-spine2 is on all of them.
  for (auto& f : seen) {
    const bool r2 = f.src.starts_with("r2") || f.dst.starts_with("r2");
    const bool r3 = f.src.starts_with("r3") || f.dst.starts_with("r3");
    if (r2 && r3 && t.spine_of(f) == spine2) {
      ASSERT_TRUE(t.flap(f, original, spine1, true));
    }
  }
  LocaliserState st2;
  const auto l2 = localise(t.topo, seen, kNow, st2);
  ASSERT_EQ(l2.elements.size(), 1u) << l2.elements[0].name;
  EXPECT_EQ(l2.elements[0].name, "tor3-spine2");
  EXPECT_EQ(l2.elements[0].reason, "flapping");
}

TEST(Localise, AnElementFewerFlappingFlowsCrossIsNotNamedWhenTheOneAllCrossIsSetAside) {
  // tor3-spine2 flaps. As many rack 3 -> rack 1 flows (home known: the cable's side) as rack 1 ->
  // rack 3 ones (no home yet: both sides) flap over it, and one rack 2 -> rack 3 flow (no home).
  // tor3-spine2 is on all of them, tor1-spine2 on all but one. Most of tor3-spine2's votes come
  // from flows without a home, and steady flows cross it; but no other cable is on as many
  // flapping paths, so that is no tie to break. The Clos lab set it aside and named tor1-spine2
  // (6 of 7 flapping flows) instead.
  Tree t;
  auto flows = t.probe({});
  const uint32_t spine1 = t.id("spine1"), spine2 = t.id("spine2");
  const auto original = flows;
  size_t from3 = 0, to3 = 0;
  for (const auto& f : flows)
    if (t.spine_of(f) == spine2) {
      from3 += f.src.starts_with("r3") && f.dst.starts_with("r1");
      to3 += f.src.starts_with("r1") && f.dst.starts_with("r3");
    }
  const size_t each = std::min(from3, to3);
  ASSERT_GT(each, 2u);
  size_t homed = 0, unhomed = 0, marked = 0;
  bool rack2 = false;
  for (auto& f : flows) {
    if (t.spine_of(f) != spine2) continue;
    const bool r3r1 = f.src.starts_with("r3") && f.dst.starts_with("r1");
    const bool r1r3 = f.src.starts_with("r1") && f.dst.starts_with("r3");
    const bool r2r3 = !rack2 && f.src.starts_with("r2") && f.dst.starts_with("r3");
    if (!(r3r1 && homed < each) && !(r1r3 && unhomed < each) && !r2r3) continue;
    ASSERT_TRUE(t.flap(f, original, spine1, r3r1)) << f.src << " -> " << f.dst << " has no flow over spine1";
    homed += r3r1;
    unhomed += r1r3;
    rack2 |= r2r3;
    ++marked;
  }
  ASSERT_TRUE(rack2);
  LocaliserState st;
  const auto l = localise(t.topo, flows, kNow, st);
  EXPECT_EQ(l.flows_flapping, marked);
  EXPECT_EQ(named(l).count("tor1-spine2"), 0u);
  ASSERT_EQ(l.elements.size(), 1u) << l.elements[0].name;
  EXPECT_EQ(l.elements[0].name, "tor3-spine2");
}

TEST(Localise, AfterAFlappingCableIsRepairedItsHealthySideIsNotNamed) {
  // tor3-spine2 came back: most of the flows that moved have settled on it again (steady), a
  // quarter still carry the flapping mark, and fewer steady flows than usual were seen over
  // spine1 in this interval. Both cables get the flapping flows' votes; the healthy tor3-spine1,
  // which steady flows cross, must not be named (it was, once, in the Clos lab), nor the repaired
  // cable once most of its flows are steady.
  Tree t;
  auto flows = t.probe({});
  const uint32_t spine1 = t.id("spine1"), spine2 = t.id("spine2");
  std::vector<FlowObservation> seen;
  size_t k = 0, marked = 0, dropped = 0;
  for (auto f : flows) {
    const bool rack3 = f.src.starts_with("r3") != f.dst.starts_with("r3");
    if (rack3 && t.spine_of(f) == spine1 && (k++ % 2) == 0) {
      ++dropped;  // not seen this interval
      continue;
    }
    if (rack3 && t.spine_of(f) == spine2 && (k++ % 4) == 0) {
      f.other_hops = t.pair_hops_over(flows, f, spine1);
      if (!f.other_hops.empty()) {
        f.path_flapping = true;
        ++marked;
      }
    }
    seen.push_back(std::move(f));
  }
  ASSERT_GE(marked, 2u);
  ASSERT_GT(dropped, 0u);
  LocaliserState st;
  const auto l = localise(t.topo, seen, kNow, st);
  EXPECT_EQ(l.flows_flapping, marked);
  EXPECT_EQ(named(l).count("tor3-spine1"), 0u);
  EXPECT_EQ(named(l).count("tor3-spine2"), 0u);
}

TEST(Localise, SpoofedLoopingAndMissingHopsNeverCrashOrStall) {
  Tree t;
  auto flows = t.probe({});
  std::mt19937_64 rng(3);
  size_t i = 0;
  for (auto& f : flows) {
    switch (i++ % 6) {
      case 0:
        f.hops = {"10.60.0.1", "203.0.113.9", "10.60.0.2"};  // spoofed middle hop
        break;
      case 1:
        f.hops = {"10.60.0.1", "10.61.0.1", "10.60.0.1", "10.61.0.1"};  // a loop
        break;
      case 2:
        f.hops.assign(5000, "10.61.0.2");  // a routing loop traced to the end
        break;
      case 3:
        f.hops = {"", "", "", "", ""};  // nobody answered
        break;
      case 4:
        f.hops = {"\xff\xfe garbage", std::string(4096, 'x')};
        break;
      default:
        break;  // the real path
    }
  }
  LocaliserState st;
  const auto t0 = std::chrono::steady_clock::now();
  const auto l = localise(t.topo, flows, kNow, st);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_TRUE(l.elements.empty()) << l.elements[0].name;
  EXPECT_FALSE(l.disagreements.empty());
  EXPECT_LE(l.disagreements.size(), LocaliseOptions{}.max_disagreements);
  EXPECT_GT(l.flows_known_path, 0u);
}

TEST(Localise, NamedAcrossWindowsAndClearedWhenEvidenceIsGone) {
  Tree t;
  const sim::Fault f{t.id("tor2"), 0, 0.03, 0};
  LocaliserState st;
  auto l = localise(t.topo, t.probe({f}, 1, kNow), kNow, st);
  EXPECT_EQ(named(l), std::set<std::string>{"tor2"});
  l = localise(t.topo, t.probe({f}, 2, kNow + kWindow), kNow + kWindow, st);
  ASSERT_EQ(named(l), std::set<std::string>{"tor2"});
  EXPECT_EQ(l.elements[0].since_unix_ns, kNow);  // the streak began with the first window
  l = localise(t.topo, t.probe({}, 3, kNow + 2 * kWindow), kNow + 2 * kWindow, st);
  EXPECT_TRUE(l.elements.empty());
  EXPECT_TRUE(st.named_since.empty());
  // Stale windows are not evidence: the fault's window, read a minute later, names nothing.
  l = localise(t.topo, t.probe({f}, 4, kNow), kNow + 60 * 1'000'000'000LL, st);
  EXPECT_EQ(l.flows, 0u);
  EXPECT_TRUE(l.elements.empty());
}

TEST(Localise, AgentsTheTopologyDoesNotPlaceAreCounted) {
  Tree t;
  auto flows = t.probe({});
  FlowObservation stray = flows[0];
  stray.src = "laptop";
  flows.push_back(stray);
  LocaliserState st;
  const auto l = localise(t.topo, flows, kNow, st);
  EXPECT_EQ(l.flows_unplaced, 1u);
  EXPECT_EQ(l.unplaced_hosts, std::vector<std::string>{"laptop"});
}

TEST(Localise, AProberWhoseWindowsLagIsLeftOutAndNamed) {
  Tree t;
  auto flows = t.probe({});
  const std::string lagging = flows[0].src;
  size_t lagging_flows = 0;
  for (auto& f : flows)
    if (f.src == lagging) {
      // Its reports reach the controller late: its windows ended 3 window lengths (max_age) ago.
      f.start_unix_ns -= 30'000'000'000LL;
      f.end_unix_ns -= 30'000'000'000LL;
      ++lagging_flows;
    }
  ASSERT_GT(lagging_flows, 0u);
  LocaliserState st;
  const auto l = localise(t.topo, flows, kNow, st);
  EXPECT_EQ(l.flows_stale, lagging_flows);
  EXPECT_EQ(l.flows + l.flows_stale, flows.size());
  EXPECT_EQ(l.stale_hosts, std::vector<std::string>{lagging});
  EXPECT_GT(l.stale_oldest_end_unix_ns, 0);
  EXPECT_LT(l.stale_oldest_end_unix_ns, kNow - LocaliseOptions{}.max_age_ns);
  const nlohmann::json c = coverage_json(l);
  EXPECT_EQ(c["flows_stale"], lagging_flows);
  EXPECT_EQ(c["stale_hosts"], (nlohmann::json{lagging}));
  EXPECT_EQ(c["flows"], l.flows);
  EXPECT_EQ(c["stale_oldest_end_unix_ns"], l.stale_oldest_end_unix_ns);
  // Fresh from every prober: nothing stale, and the key for the oldest stale window is absent.
  const auto fresh = localise(t.topo, t.probe({}), kNow, st);
  EXPECT_EQ(fresh.flows_stale, 0u);
  EXPECT_TRUE(fresh.stale_hosts.empty());
  EXPECT_FALSE(coverage_json(fresh).contains("stale_oldest_end_unix_ns"));
}

TEST(Localise, AnswersInTheApiShapes) {
  Tree t;
  LocaliserState st;
  const auto l = localise(t.topo, t.probe({{t.id("tor1-spine2"), 1, 0.05, 0}}), kNow, st);
  const nlohmann::json e = elements_json(l);
  ASSERT_EQ(e.size(), 1u) << e.dump();
  EXPECT_EQ(e[0]["type"], "link");
  EXPECT_EQ(e[0]["name"], "tor1-spine2");
  EXPECT_EQ(e[0]["reason"], "loss");
  EXPECT_EQ(e[0]["detail"], "spine2 -> tor1");
  EXPECT_GT(e[0]["confidence"].get<double>(), 0.5);
  EXPECT_LE(e[0]["confidence"].get<double>(), 1.0);
  EXPECT_GT(e[0]["loss_ratio"].get<double>(), 0.02);
  EXPECT_EQ(e[0]["extra_latency_ns"], 0);
  EXPECT_EQ(e[0]["since_unix_ns"], kNow);
  EXPECT_GT(e[0]["evidence"]["flows"].get<size_t>(), 0u);
  EXPECT_GT(e[0]["evidence"]["pairs"].get<size_t>(), 0u);
  EXPECT_TRUE(e[0]["evidence"]["examples"].is_array());

  std::map<proto::Protocol, ElementWatch::Answer> latest;
  auto shared = std::make_shared<const Topology>(t.topo);
  latest[proto::Protocol::udp] = ElementWatch::Answer{shared, l, kNow};
  const nlohmann::json topo = topology_json(shared.get(), latest);
  EXPECT_EQ(topo["configured"], true);
  EXPECT_EQ(topo["source"], "sim");
  EXPECT_EQ(topo["elements"].size(), t.topo.elements().size());
  EXPECT_EQ(topo["state"], (nlohmann::json{{"tor1-spine2", "suspect"}}));
  bool saw_link = false, saw_tor = false;
  for (const auto& el : topo["elements"]) {
    if (el["name"] == "tor1-spine2") {
      saw_link = true;
      EXPECT_EQ(el["type"], "link");
      EXPECT_EQ(el["ends"], (nlohmann::json{"tor1", "spine2"}));
    }
    if (el["name"] == "tor3") {
      saw_tor = true;
      EXPECT_EQ(el["rack"], "rack3");
    }
  }
  EXPECT_TRUE(saw_link && saw_tor);
  EXPECT_EQ(topology_json(nullptr, latest),
            (nlohmann::json{{"configured", false}, {"elements", nlohmann::json::array()}}));

  PromText prom;
  render_element_metrics(prom, latest);
  EXPECT_NE(prom.text().find("weft_element_suspect{type=\"link\",name=\"tor1-spine2\",protocol=\"udp\"} 1"),
            std::string::npos)
      << prom.text().substr(0, 400);
  EXPECT_NE(prom.text().find("weft_element_suspect{type=\"spine\",name=\"spine1\",protocol=\"udp\"} 0"),
            std::string::npos);
  EXPECT_NE(
      prom.text().find("weft_element_loss_ratio{type=\"link\",name=\"tor1-spine2\",protocol=\"udp\"} 0.0"),
      std::string::npos);
}

TEST(ClosSim, ProbesAsAgentsWould) {
  Tree t;
  std::mt19937_64 rng(1);
  const auto p = sim::simulate(t.topo, t.spec, {}, kNow, rng);
  // 12 hosts, each probing 3 in its rack and 1 in each of the 2 others, K = 8 flows per pair.
  EXPECT_EQ(p.pairs.size(), 12u * 5);
  EXPECT_EQ(p.flows.size(), 12u * 5 * 8);
  uint64_t sent = 0;
  std::set<std::string> spines_seen;
  for (const auto& f : p.flows) {
    if (f.src == "r1h1" && f.dst == "r2h1") {
      sent += f.sent;
      ASSERT_EQ(f.hops.size(), 3u);
      spines_seen.insert(f.hops[1]);
    }
  }
  EXPECT_EQ(sent, t.spec.probes_per_pair);
  EXPECT_EQ(spines_seen.size(), 2u);  // the flows' hashes use both spines
}
