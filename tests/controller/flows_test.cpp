// The controller's per-flow state (issue 24): per-flow counters and baselines from ingest, the
// observations localisation reads (one per flow, or one per pair without flows), traced paths with
// their changes and flapping, and hostile trace answers (spoofed, looping, missing hops).
#include "controller/flows.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "controller/ingest.hpp"
#include "controller/rtt_baseline.hpp"
#include "lib/test_util.hpp"

using namespace weft::controller;
using namespace weft::testlib;
using weft::proto::Protocol;

namespace {

class MemStore final : public Store {
 public:
  weft::Status append(const std::string&, std::span<const weft::proto::WindowStats>, int64_t,
                      std::string_view) override {
    return {};
  }
  weft::Result<std::vector<weft::proto::WindowStats>> history(Protocol, const std::string&,
                                                              const std::string&, int64_t, int64_t,
                                                              size_t) override {
    return std::vector<weft::proto::WindowStats>{};
  }
  weft::Status load_recent(int64_t, const RestoreFn&) override { return {}; }
  weft::Status save_registration(const std::string&, std::string_view, int64_t) override { return {}; }
  weft::Status remove_registration(const std::string&) override { return {}; }
  weft::Status load_registrations(const RegistrationFn&) override { return {}; }
  weft::Status apply_retention(int64_t) override { return {}; }
  StoreInfo info() const override { return {"mem", "", true, ""}; }
};

struct Fixture {
  Mesh mesh{std::make_shared<const Config>(
      *parse_config("groups:\n  - {name: all, protocols: [udp], members: ['*']}\n", "<test>"))};
  MemStore store;
  Ingest ingest{mesh, store};
  Fixture() {
    int i = 1;
    for (const char* n : {"h1", "h2", "h3"})
      mesh.register_agent({n, {"10.0.0." + std::to_string(i++)}, {Protocol::udp}, "test", 7777, 7778},
                          now_ns());
  }
  // A window of h1 -> dst starting `ago` seconds before now; with `flows` flows, flow `bad` losing
  // `bad_lost` of its 10 probes and every flow's RTT median `rtt`.
  void send(const std::string& dst, int ago, size_t flows, size_t bad = 99, uint64_t bad_lost = 0,
            int64_t rtt = 50'000, std::vector<weft::proto::PathTrace> paths = {}) {
    const int64_t start = (now_ns() / 1'000'000'000 - ago) * 1'000'000'000;
    auto w = window(dst, start, 10 * std::max<size_t>(flows, 1), flows > bad ? bad_lost : 0);
    for (size_t k = 0; k < flows; ++k)
      w.flows.push_back({static_cast<uint16_t>(40000 + k), 10, k == bad ? 10 - bad_lost : 10,
                         k == bad ? bad_lost : 0, rtt});
    weft::proto::Report r;
    r.agent = "h1";
    r.windows.push_back(w);
    r.paths = std::move(paths);
    auto rep = ingest.handle_report(r, now_ns());
    ASSERT_EQ(rep.status, 200) << rep.body;
  }
};

weft::proto::PathTrace trace(uint16_t sport, int64_t at, std::vector<std::string> hops, bool reached = true) {
  return {Protocol::udp, "h2", sport, 7777, at, reached, std::move(hops)};
}

}  // namespace

TEST(FlowTable, PerFlowObservationsAndPairsWithoutFlows) {
  Fixture f;
  f.send("h2", 5, 8, /*bad=*/3, /*bad_lost=*/4);
  f.send("h3", 5, 0);  // an older agent's window: no flows
  auto obs = f.ingest.flows().observations(Protocol::udp, now_ns());
  size_t h2 = 0, h3 = 0;
  for (const auto& o : obs) {
    if (o.dst == "h2") {
      ++h2;
      EXPECT_EQ(o.src, "h1");
      EXPECT_GE(o.src_port, 40000);
      EXPECT_EQ(o.dst_port, 7777);
      EXPECT_EQ(o.sent, 10u);
      EXPECT_EQ(o.lost, o.src_port == 40003 ? 4u : 0u) << "1 of 8 flows loses 40 %";
      EXPECT_EQ(o.rtt_p50_ns, 50'000);
    } else if (o.dst == "h3") {
      ++h3;
      EXPECT_EQ(o.src_port, 0) << "no per-flow detail: the pair as a whole";
      EXPECT_EQ(o.sent, 10u);
    }
  }
  EXPECT_EQ(h2, 8u);
  EXPECT_EQ(h3, 1u);
  EXPECT_TRUE(f.ingest.flows().observations(Protocol::tcp, now_ns()).empty());
  // Long after the windows: nothing current to observe.
  EXPECT_TRUE(f.ingest.flows().observations(Protocol::udp, now_ns() + 3'600'000'000'000).empty());
}

TEST(FlowTable, ObservationsAreOneCutThroughTime) {
  Fixture f;
  f.send("h2", 20, 8);
  f.send("h3", 20, 8);
  f.send("h2", 10, 8, /*bad=*/3, /*bad_lost=*/4);  // h1 -> h2's next window is in, h1 -> h3's not yet
  auto lost_to = [&](const std::string& dst) {
    uint64_t lost = 0;
    int64_t end = 0;
    for (const auto& o : f.ingest.flows().observations(Protocol::udp, now_ns()))
      if (o.dst == dst) {
        lost += o.lost;
        EXPECT_TRUE(end == 0 || end == o.end_unix_ns) << "one window per pair";
        end = o.end_unix_ns;
      }
    return std::pair{lost, end};
  };
  const auto [h2_lost, h2_end] = lost_to("h2");
  const auto [h3_lost, h3_end] = lost_to("h3");
  EXPECT_EQ(h2_lost, 0u) << "most flows are at the earlier window: h2's are read there too";
  EXPECT_EQ(h2_end, h3_end);
  f.send("h3", 10, 8);  // now every flow has the later window
  EXPECT_EQ(lost_to("h2").first, 4u);
  EXPECT_GT(lost_to("h2").second, h2_end);
}

TEST(FlowTable, AFlowAWindowBehindTheCutIsLeftOutUntilItsWindowComes) {
  Fixture f;
  f.send("h3", 20, 1, /*bad=*/0, /*bad_lost=*/6);  // h1 -> h3 lost 6 of 10 in the earlier window
  f.send("h2", 10, 8);                             // 8 of the 9 flows are at the later one, clean
  auto to = [&](const std::string& dst) {
    std::vector<FlowObservation> v;
    for (const auto& o : f.ingest.flows().observations(Protocol::udp, now_ns()))
      if (o.dst == dst) v.push_back(o);
    return v;
  };
  ASSERT_EQ(to("h2").size(), 8u);
  EXPECT_TRUE(to("h3").empty()) << "its latest window ended before the cut's began: an interval the "
                                   "others have left, not read beside them (nor as the pair's window)";
  f.send("h3", 10, 1);  // its report for the later window comes in
  const auto h3 = to("h3");
  ASSERT_EQ(h3.size(), 1u);
  EXPECT_EQ(h3[0].lost, 0u);
  EXPECT_EQ(h3[0].end_unix_ns, to("h2")[0].end_unix_ns);
}

TEST(FlowTable, APairWithoutFlowsAWindowBehindTheCutIsLeftOutToo) {
  Fixture f;
  f.send("h3", 20, 0);  // an older agent's pair window, no per-flow detail, the earlier window
  f.send("h2", 10, 8);  // every flow at the later one
  auto to_h3 = [&] {
    size_t n = 0;
    for (const auto& o : f.ingest.flows().observations(Protocol::udp, now_ns())) n += o.dst == "h3";
    return n;
  };
  EXPECT_EQ(to_h3(), 0u) << "a pair window behind the cut is as stale as a flow's";
  f.send("h3", 10, 0);
  EXPECT_EQ(to_h3(), 1u);
}

TEST(FlowTable, BaselineIsTheFlowsUsualRtt) {
  Fixture f;
  for (int i = 0; i < 5; ++i) f.send("h2", 50 - i, 2, 99, 0, 50'000);
  f.send("h2", 40, 2, 99, 0, 900'000);  // a slow window: the baseline is of the windows before it
  auto p = f.ingest.flows().pair(Protocol::udp, "h1", "h2", now_ns());
  ASSERT_EQ(p.flows.size(), 2u);
  EXPECT_EQ(p.flows[0].baseline_rtt_ns, 50'000);
  EXPECT_EQ(p.flows[0].latest.network_rtt_p50_ns, 900'000);
  f.send("h2", 45, 2, 99, 0, 1);  // older than the latest: a retried batch, ignored
  EXPECT_EQ(f.ingest.flows().pair(Protocol::udp, "h1", "h2", now_ns()).flows[0].latest.network_rtt_p50_ns,
            900'000);
}

TEST(FlowTable, AFlowThatStaysSlowStaysSlowerThanItsBaseline) {
  // 10 windows at 50 us, then 30 at 2.05 ms (a spine 2 ms slower for a minute of 2 s windows): the
  // baseline must not make the slow RTT its normal. With 1/16 per window it had reached 1.77 ms
  // (0.28 ms extra, and on towards nothing); now it has moved 0.22 ms.
  Fixture f;
  for (int i = 0; i < 40; ++i) f.send("h2", 60 - i, 1, 99, 0, i < 10 ? 50'000 : 2'050'000);
  auto flow = [&] { return f.ingest.flows().pair(Protocol::udp, "h1", "h2", now_ns()).flows.at(0); };
  const int64_t extra = flow().latest.network_rtt_p50_ns - flow().baseline_rtt_ns;
  EXPECT_GE(extra, 1'700'000) << "baseline " << flow().baseline_rtt_ns;
  EXPECT_LE(extra, 2'000'000) << "the baseline still moves, slowly";
  // Healthy again: it follows at 1/16 per window, down towards 50 us.
  const int64_t before = flow().baseline_rtt_ns;
  for (int i = 0; i < 16; ++i) f.send("h2", 20 - i, 1, 99, 0, 50'000);
  EXPECT_LT(flow().baseline_rtt_ns - 50'000, (before - 50'000) / 2);
  // Noise within half again of the baseline moves it at the usual rate.
  EXPECT_EQ(next_rtt_baseline(100'000, 116'000), 101'000);
  EXPECT_EQ(next_rtt_baseline(100'000, 100'000 + 256 * 1'000), 101'000) << "well above: 1/256";
  EXPECT_EQ(next_rtt_baseline(0, 70'000), 70'000);
  EXPECT_EQ(next_rtt_baseline(70'000, 0), 70'000) << "no median: no change";
}

TEST(FlowTable, PathChangesAreCountedAndFlappingIsNoticed) {
  Fixture f;
  const int64_t t0 = now_ns();
  const std::vector<std::string> a{"10.1.0.1", "10.2.0.1", "10.0.0.2"}, b{"10.1.0.1", "10.2.0.2", "10.0.0.2"};
  f.send("h2", 5, 2, 99, 0, 50'000, {trace(40000, t0, a), trace(40001, t0, a)});
  f.send("h2", 4, 2, 99, 0, 50'000, {trace(40000, t0 + 1, a), trace(40001, t0 + 1, b)});
  auto p = f.ingest.flows().pair(Protocol::udp, "h1", "h2", now_ns());
  EXPECT_EQ(p.flows[0].path_changes, 0u);
  EXPECT_EQ(p.flows[1].path_changes, 1u);
  EXPECT_EQ(p.flows[1].last_change_unix_ns, t0 + 1);
  EXPECT_FALSE(p.flows[1].flapping) << "one change is a change, not a flap";
  // Flow 40001 now changes every trace: flapping. 40000 stays put.
  for (int i = 2; i < 8; ++i)
    f.send("h2", 4, 2, 99, 0, 50'000, {trace(40000, t0 + i, a), trace(40001, t0 + i, i % 2 ? b : a)});
  p = f.ingest.flows().pair(Protocol::udp, "h1", "h2", now_ns());
  EXPECT_TRUE(p.flows[1].flapping);
  EXPECT_FALSE(p.flows[0].flapping);
  EXPECT_EQ(p.flows[1].paths.size(), FlowTable::kPathHistory);
  bool seen = false;
  for (const auto& o : f.ingest.flows().observations(Protocol::udp, now_ns()))
    if (o.src_port == 40001) {
      seen = true;
      EXPECT_TRUE(o.path_flapping);
      EXPECT_EQ(o.hops.size(), 3u);
      EXPECT_EQ(o.other_hops, a) << "the path it changed from";
    }
  EXPECT_TRUE(seen);
  // A flap that stopped stops being one kFlapHoldNs after its last change, without more traces.
  const int64_t quiet = t0 + 7 + FlowTable::kFlapHoldNs + 1;
  EXPECT_FALSE(f.ingest.flows().pair(Protocol::udp, "h1", "h2", quiet).flows[1].flapping);
  EXPECT_TRUE(f.ingest.flows().pair(Protocol::udp, "h1", "h2", quiet - 2).flows[1].flapping);
  // It settles: after enough traces on one path it is no longer flapping.
  for (int i = 8; i < 14; ++i) f.send("h2", 4, 2, 99, 0, 50'000, {trace(40001, t0 + i, a)});
  EXPECT_FALSE(f.ingest.flows().pair(Protocol::udp, "h1", "h2", now_ns()).flows[1].flapping);
  // The drill-down's JSON.
  auto j = nlohmann::json::parse(pair_flows_json(f.ingest.flows().pair(Protocol::udp, "h1", "h2", now_ns())));
  EXPECT_EQ(j["flows"].size(), 2u);
  EXPECT_EQ(j["flows"][1]["src_port"], 40001);
  EXPECT_GE(j["flows"][1]["path_changes"].get<int>(), 7);
  EXPECT_EQ(j["flows"][1]["paths"].back()["hops"][1], "10.2.0.1");
  EXPECT_EQ(j["flows"][0]["window"]["sent"], 10);
}

TEST(FlowTable, APathTracedOftenThatGoesBackAndForthFlapsAReroutedOneDoesNot) {
  // The agent traces a flow whose path changed every ~2 s: over a 3 s flap it sees the path change
  // every second or third trace, never in most of them; three changes in the horizon are a flap.
  Fixture f;
  const int64_t t0 = now_ns() - 20'000'000'000;
  const std::vector<std::string> a{"10.1.0.1", "10.2.0.1", "10.0.0.2"}, b{"10.1.0.1", "10.2.0.2", "10.0.0.2"};
  const char* flap = "aabbaabb";     // 40000: flaps
  const char* reroute = "aabbbbaa";  // 40001: a fault and its repair, two changes
  for (int i = 0; i < 8; ++i) {
    const int64_t at = t0 + i * 2'000'000'000LL;
    f.send("h2", 4, 2, 99, 0, 50'000,
           {trace(40000, at, flap[i] == 'a' ? a : b), trace(40001, at, reroute[i] == 'a' ? a : b)});
  }
  auto p = f.ingest.flows().pair(Protocol::udp, "h1", "h2", now_ns());
  ASSERT_EQ(p.flows.size(), 2u);
  EXPECT_EQ(p.flows[0].path_changes, 3u);
  EXPECT_TRUE(p.flows[0].flapping) << "3 changes in 14 s";
  EXPECT_EQ(p.flows[1].path_changes, 2u);
  EXPECT_FALSE(p.flows[1].flapping) << "a reroute and its repair";
  for (const auto& o : f.ingest.flows().observations(Protocol::udp, now_ns()))
    EXPECT_EQ(o.path_flapping, o.src_port == 40000) << o.src_port;
}

TEST(FlowTable, AnOutageAndItsRepairTracedOnceEachIsNotAFlap) {
  // A flow traced rarely: once on its path, once when its spine died (it lost, then took the
  // detour), once when the spine came back. Two changes in three traces, "most of them", but the
  // detour held 12 s: an outage and its repair. The same three traces 3 s apart are a flap.
  Fixture f;
  const int64_t s = 1'000'000'000;
  const int64_t t0 = now_ns() - 30 * s;
  const std::vector<std::string> a{"10.1.0.1", "10.2.0.1", "10.0.0.2"}, b{"10.1.0.1", "10.2.0.2", "10.0.0.2"};
  const std::vector<std::pair<int64_t, int64_t>> at{{0, 0}, {2, 2}, {5, 14}};  // (40000 flap, 40001 outage)
  for (size_t i = 0; i < at.size(); ++i)
    f.send("h2", 9 - static_cast<int>(i), 2, 99, 0, 50'000,
           {trace(40000, t0 + at[i].first * s, i == 1 ? b : a),
            trace(40001, t0 + at[i].second * s, i == 1 ? b : a)});
  auto p = f.ingest.flows().pair(Protocol::udp, "h1", "h2", t0 + 15 * s);
  ASSERT_EQ(p.flows.size(), 2u);
  EXPECT_EQ(p.flows[0].path_changes, 2u);
  EXPECT_EQ(p.flows[1].path_changes, 2u);
  EXPECT_TRUE(p.flows[0].flapping) << "away 3 s and back";
  EXPECT_FALSE(p.flows[1].flapping) << "away 12 s and back: an outage and its repair";
  size_t seen = 0;
  for (const auto& o : f.ingest.flows().observations(Protocol::udp, t0 + 15 * s)) {
    ++seen;
    EXPECT_EQ(o.path_flapping, o.src_port == 40000) << o.src_port;
  }
  EXPECT_EQ(seen, 2u);
  // A third change makes either a flap, however slow.
  f.send("h2", 5, 2, 99, 0, 50'000, {trace(40000, t0 + 16 * s, b), trace(40001, t0 + 16 * s, b)});
  p = f.ingest.flows().pair(Protocol::udp, "h1", "h2", t0 + 17 * s);
  EXPECT_TRUE(p.flows[0].flapping);
  EXPECT_TRUE(p.flows[1].flapping);
}

TEST(FlowTable, TheHomePathIsTheOneHeldBeforeTheFlapping) {
  Fixture f;
  const int64_t s = 1'000'000'000;
  const int64_t t0 = now_ns() - 200 * s;
  const std::vector<std::string> a{"10.1.0.1", "10.2.0.1", "10.0.0.2"}, b{"10.1.0.1", "10.2.0.2", "10.0.0.2"};
  auto home = [&] { return f.ingest.flows().pair(Protocol::udp, "h1", "h2", now_ns()).flows[0].home_hops; };
  // First trace on the detour: the home is that until a path has held 20 s.
  f.send("h2", 9, 1, 99, 0, 50'000, {trace(40000, t0, b)});
  EXPECT_EQ(home(), b);
  f.send("h2", 8, 1, 99, 0, 50'000, {trace(40000, t0 + 10 * s, a)});
  f.send("h2", 7, 1, 99, 0, 50'000, {trace(40000, t0 + 25 * s, a)});
  EXPECT_EQ(home(), b) << "a held 15 s only";
  EXPECT_FALSE(f.ingest.flows().pair(Protocol::udp, "h1", "h2", now_ns()).flows[0].home_held);
  // The localiser is told no home until one has held: the first trace may be the detour.
  for (const auto& o : f.ingest.flows().observations(Protocol::udp, t0 + 26 * s))
    EXPECT_TRUE(o.home_hops.empty()) << o.home_hops.size() << " hops";
  f.send("h2", 6, 1, 99, 0, 50'000, {trace(40000, t0 + 41 * s, a)});
  EXPECT_EQ(home(), a) << "a held 31 s";
  EXPECT_TRUE(f.ingest.flows().pair(Protocol::udp, "h1", "h2", now_ns()).flows[0].home_held);
  // Flapping every few seconds: no path holds 20 s, the home stays.
  for (int i = 0; i < 12; ++i)
    f.send("h2", 5, 1, 99, 0, 50'000, {trace(40000, t0 + (60 + 3 * i) * s, i % 2 ? a : b)});
  EXPECT_EQ(home(), a);
  // Back home at 93 s, last seen off it at 90 s: it stops flapping 15 s after 90 s, not 93 s.
  auto flapping = [&](int64_t at) {
    return f.ingest.flows().pair(Protocol::udp, "h1", "h2", at).flows[0].flapping;
  };
  EXPECT_TRUE(flapping(t0 + 90 * s + FlowTable::kFlapHoldNs - s));
  EXPECT_FALSE(flapping(t0 + 90 * s + FlowTable::kFlapHoldNs + s));
  bool seen = false;
  for (const auto& o : f.ingest.flows().observations(Protocol::udp, t0 + 95 * s)) {
    seen = true;
    EXPECT_EQ(o.home_hops, a);
  }
  EXPECT_TRUE(seen);
}

TEST(FlowTable, TwoTracesOfOnePath26SecondsApartMakeItsHome) {
  // The Clos lab's flows over a cable that then flapped had been traced twice, 26-29 s apart (the
  // earlier faults' losses each traced them): that path is their home. With none, the flapping
  // cable was not named for over 30 s.
  Fixture f;
  const int64_t s = 1'000'000'000;
  const int64_t t0 = now_ns() - 100 * s;
  const std::vector<std::string> a{"10.1.0.1", "10.2.0.1", "10.0.0.2"};
  f.send("h2", 9, 1, 99, 0, 50'000, {trace(40000, t0, a)});
  f.send("h2", 8, 1, 99, 0, 50'000, {trace(40000, t0 + 26 * s, a)});
  const auto p = f.ingest.flows().pair(Protocol::udp, "h1", "h2", now_ns());
  ASSERT_EQ(p.flows.size(), 1u);
  EXPECT_TRUE(p.flows[0].home_held);
  bool seen = false;
  for (const auto& o : f.ingest.flows().observations(Protocol::udp, t0 + 27 * s)) {
    seen = true;
    EXPECT_EQ(o.home_hops, a);
  }
  EXPECT_TRUE(seen);
}

TEST(FlowTable, HostileAndMissingHops) {
  bool looped = false;
  // Spoofed junk becomes "no answer"; a repeated address (a loop) cuts the path.
  auto h =
      FlowTable::sanitise_hops({"10.1.0.1", "evil<script>", "", "10.2.0.1", "10.1.0.1", "10.3.0.1"}, looped);
  EXPECT_EQ(h, (std::vector<std::string>{"10.1.0.1", "", "", "10.2.0.1"}));
  EXPECT_TRUE(looped);
  h = FlowTable::sanitise_hops({"fe80::1", "::ffff:10.0.0.1", "300.1.1.1"}, looped);
  EXPECT_EQ(h, (std::vector<std::string>{"fe80::1", "::ffff:10.0.0.1", ""}));
  EXPECT_FALSE(looped);
  // A hop that did not answer in one trace is not a change.
  TracedPath x{1, true, false, {"10.1.0.1", "", "10.0.0.2"}},
      y{2, true, false, {"10.1.0.1", "10.2.0.1", "10.0.0.2"}};
  EXPECT_TRUE(FlowTable::same_path(x, y));
  TracedPath z{3, true, false, {"10.1.0.1", "10.2.0.9", "10.0.0.2"}};
  EXPECT_FALSE(FlowTable::same_path(y, z));
  TracedPath cut{4, false, false, {"10.1.0.1"}};  // max hops or timeouts: a prefix, no change
  EXPECT_TRUE(FlowTable::same_path(y, cut));
  // The target's answer at its own TTL lost: the next TTL reaches it, one hop "longer". The same path.
  TracedPath late{5, true, false, {"10.1.0.1", "10.2.0.1", "", "10.0.0.2"}};
  EXPECT_TRUE(FlowTable::same_path(y, late));
  EXPECT_TRUE(FlowTable::same_path(late, y));
  EXPECT_TRUE(FlowTable::same_path(x, late));
  // A really longer path (a router more that answered) is a change, and so is another router
  // before a lost answer, or another target.
  TracedPath longer{6, true, false, {"10.1.0.1", "10.2.0.1", "10.3.0.1", "10.0.0.2"}};
  EXPECT_FALSE(FlowTable::same_path(y, longer));
  TracedPath other{7, true, false, {"10.1.0.1", "10.2.0.9", "", "10.0.0.2"}};
  EXPECT_FALSE(FlowTable::same_path(y, other));
  TracedPath elsewhere{8, true, false, {"10.1.0.1", "10.2.0.1", "10.0.0.3"}};
  EXPECT_FALSE(FlowTable::same_path(y, elsewhere));

  // Through ingest: a looping, spoofed trace is kept sanitised and never crashes anything; traces
  // for names that are not host names, or for the agent itself, are dropped.
  Fixture f;
  std::vector<std::string> loop;
  for (int i = 0; i < 64; ++i) loop.push_back(i % 2 ? "10.9.0.1" : "10.9.0.2");
  auto bad_name = trace(40000, now_ns(), {"10.1.0.1"});
  bad_name.target = "no such/host";
  auto self = trace(40000, now_ns(), {"10.1.0.1"});
  self.target = "h1";
  f.send("h2", 5, 1, 99, 0, 50'000, {trace(40000, now_ns(), loop), bad_name, self});
  auto p = f.ingest.flows().pair(Protocol::udp, "h1", "h2", now_ns());
  ASSERT_EQ(p.flows.size(), 1u);
  ASSERT_EQ(p.flows[0].paths.size(), 1u);
  EXPECT_TRUE(p.flows[0].paths[0].looped);
  EXPECT_FALSE(p.flows[0].paths[0].reached);
  EXPECT_EQ(p.flows[0].paths[0].hops.size(), 2u);
  EXPECT_TRUE(f.ingest.flows().pair(Protocol::udp, "h1", "h1", now_ns()).flows.empty());
}

// The per-protocol flow count in the config and the pinglist it gives agents.
TEST(FlowTable, ConfigFlowsPerProtocol) {
  auto c = parse_config("protocols:\n  udp: {flows: 16}\n  tcp: {interval: 1s}\n", "<test>");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->plan(Protocol::udp)->flows_or_default(), 16u);
  EXPECT_EQ(c->plan(Protocol::tcp)->flows_or_default(), 1u);
  auto d = parse_config("protocols:\n  udp: {interval: 100ms}\n", "<test>");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->plan(Protocol::udp)->flows_or_default(), 8u) << "the default for udp";
  auto bad = parse_config("protocols:\n  tcp: {flows: 4}\n", "<test>");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("protocols.tcp.flows"), std::string::npos) << bad.error().message;
  auto big = parse_config("protocols:\n  udp: {flows: 65}\n", "<test>");
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message.find("flows"), std::string::npos) << big.error().message;
}
