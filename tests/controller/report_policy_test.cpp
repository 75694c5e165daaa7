// What an agent may report (controller/report_policy.hpp), through Ingest: its own name only, ended
// windows, its pinglist's targets (or one that left after the window began), health within bounds,
// and a size bound before decoding.
#include "controller/report_policy.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "controller/ingest.hpp"
#include "lib/test_util.hpp"

using namespace weft::controller;
using namespace weft::testlib;
using weft::proto::Protocol;

namespace {

struct Policy : ::testing::Test {
  TempDir dir;
  std::unique_ptr<Store> store;
  std::unique_ptr<Mesh> mesh;
  std::unique_ptr<Ingest> ingest;
  void SetUp() override {
    auto s = open_sqlite_store(dir.file("h.db"));
    ASSERT_TRUE(s) << s.error().message;
    store = std::move(*s);
    auto cfg = parse_config("groups:\n  - {name: all, protocols: [udp], members: ['h*']}\n", "<test>");
    ASSERT_TRUE(cfg) << cfg.error().message;
    mesh = std::make_unique<Mesh>(std::make_shared<const Config>(*cfg));
    ingest = std::make_unique<Ingest>(*mesh, *store);
    for (int i = 1; i <= 3; ++i) add(i);
  }
  void add(int i) {
    mesh->register_agent(
        {"h" + std::to_string(i), {"10.0.0." + std::to_string(i)}, {Protocol::udp}, "t", 7777, 0}, now_ns());
  }
  weft::proto::Report report(const std::string& agent, std::vector<weft::proto::WindowStats> ws) {
    weft::proto::Report r;
    r.agent = agent;
    r.windows = std::move(ws);
    return r;
  }
  static nlohmann::json body(const IngestReply& r) { return nlohmann::json::parse(r.body); }
};

}  // namespace

TEST_F(Policy, ATokenReportsForItsOwnAgentOnly) {
  const int64_t t = now_ns() - 5'000'000'000;
  auto r = ingest->handle_report(report("h2", {window("h3", t)}), now_ns(), "h1");
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_FALSE(mesh->latest_pair(Protocol::udp, "h2", "h3"));
  EXPECT_EQ(ingest->handle_report(report("h1", {window("h3", t)}), now_ns(), "h1").status, 200);
}

TEST_F(Policy, WindowsThatHaveNotEndedAreTooEarly) {
  const int64_t now = now_ns();
  // Ends 3 s ahead: beyond the 2 s allowance (425, nothing kept); 1 s ahead: taken.
  auto early = ingest->handle_report(report("h1", {window("h2", now + 2'000'000'000)}), now);
  EXPECT_EQ(early.status, 425) << early.body;
  EXPECT_FALSE(mesh->latest_pair(Protocol::udp, "h1", "h2"));
  EXPECT_EQ(ingest->handle_report(report("h1", {window("h2", now)}), now).status, 200);
}

TEST_F(Policy, HealthOutsideItsBoundsIsRefused) {
  const int64_t t = now_ns() - 5'000'000'000;
  for (auto set : std::vector<std::function<void(weft::proto::Health&)>>{
           [](auto& h) { h.rss_kb = UINT64_MAX; }, [](auto& h) { h.spooled_windows = UINT64_MAX; },
           [](auto& h) { h.prober_restarts = UINT64_MAX; }, [](auto& h) { h.dropped_windows = UINT64_MAX; },
           [](auto& h) { h.cpu_percent = 99999.0; }, [](auto& h) { h.probes_per_s = 1e12; }}) {
    auto r = report("h1", {window("h2", t)});
    set(r.health);
    EXPECT_EQ(ingest->handle_report(r, now_ns()).status, 400);
  }
  auto fine = report("h1", {window("h2", t)});
  fine.health = {350.0, 1u << 20, 1000.0, 5, 7, 2};
  EXPECT_EQ(ingest->handle_report(fine, now_ns()).status, 200);
}

TEST_F(Policy, WindowsToTargetsNotInThePinglistAreRefused) {
  // The controller learnt h1's list a minute ago (windows begun before that fall back to "any
  // registered agent", as after a restart).
  (void)ingest->policy().max_windows("h1", now_ns() - 60'000'000'000);
  const int64_t t = now_ns() - 5'000'000'000;
  std::vector<weft::proto::WindowStats> ws{window("h2", t), window("made-up", t), window("h3", t),
                                           window("h2", t, 100, 0, Protocol::tcp)};  // h1 probes no tcp
  auto r = ingest->handle_report(report("h1", ws), now_ns());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body(r)["accepted"], 2);
  EXPECT_EQ(body(r)["refused"], 2);
  EXPECT_FALSE(mesh->latest_pair(Protocol::udp, "h1", "made-up"));
  EXPECT_EQ(mesh->pair_count(), 2u);
  EXPECT_EQ(mesh->ingest_counters().windows_refused, 2u);
  // Only the accepted windows were stored.
  auto h = store->history(Protocol::udp, "h1", "made-up", 0, INT64_MAX, 10);
  ASSERT_TRUE(h);
  EXPECT_TRUE(h->empty());
}

TEST_F(Policy, ATargetThatLeftStillCountsForWindowsBegunBefore) {
  const int64_t before = now_ns() - 5'000'000'000;
  ASSERT_EQ(ingest->handle_report(report("h1", {window("h3", before)}), now_ns()).status, 200);
  // h3 is removed: out of h1's pinglist from now on.
  ASSERT_TRUE(mesh->remove_agent("h3"));
  const int64_t gone = now_ns();
  auto late = ingest->handle_report(report("h1", {window("h3", before + 1'000'000'000)}), gone);
  EXPECT_EQ(body(late)["accepted"], 1) << late.body;  // began before h3 left
  auto after =
      ingest->handle_report(report("h1", {window("h3", gone + 3'000'000'000)}), gone + 5'000'000'000);
  EXPECT_EQ(body(after)["refused"], 1) << after.body;  // began after: h1 was not told to probe h3
}

TEST_F(Policy, ABoundAgentsReportIsBoundBeforeDecoding) {
  // h1 may report 2 targets: max(64, 2 x 8) = 64 windows at most.
  EXPECT_EQ(ingest->policy().max_windows("h1", now_ns()), ReportPolicy::kMinWindows);
  for (int i = 4; i < 20; ++i) add(i);
  EXPECT_EQ(ingest->policy().max_windows("h1", now_ns()), 18 * ReportPolicy::kWindowsPerTarget);
  const int64_t t = now_ns() - 500'000'000'000;
  std::vector<weft::proto::WindowStats> many;
  for (int i = 0; i < 200; ++i) many.push_back(window("h2", t + i * 1'000'000'000LL));
  const std::string bin = weft::proto::encode_binary(report("h1", many));
  auto r = ingest->handle(weft::proto::kBinaryContentType, bin, now_ns(), "h1");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("at most 144"), std::string::npos) << r.body;
  const std::string js = weft::proto::encode_json(report("h1", many));
  r = ingest->handle("application/json", js, now_ns(), "h1");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("more than 144 windows"), std::string::npos) << r.body;
  // An agent this controller does not know is told to register, whatever it sent.
  EXPECT_EQ(ingest->handle(weft::proto::kBinaryContentType, bin, now_ns(), "h99").status, 409);
}

// Per-flow detail cannot bypass the target rule: a refused window's flows and a path traced to a
// made-up target leave no pair in the flow table; the allowed ones are kept.
TEST_F(Policy, FlowsAndPathsFollowTheTargetRule) {
  (void)ingest->policy().max_windows("h1", now_ns() - 60'000'000'000);  // h1's list known before
  const int64_t t = now_ns() - 5'000'000'000;
  auto r = report("h1", {window("h2", t), window("made-up", t)});
  for (auto& w : r.windows) w.flows = {{40001, 10, 10, 0, 50'000}, {40002, 10, 9, 1, 60'000}};
  weft::proto::PathTrace p;
  p.target = "h2";
  p.src_port = 40001;
  p.dst_port = 7777;
  p.traced_at_unix_ns = t;
  p.reached = true;
  p.hops = {"10.0.0.254", "10.0.0.2"};
  r.paths.push_back(p);
  p.target = "made-up";
  r.paths.push_back(p);
  p.target = "h3";
  p.protocol = Protocol::tcp;  // h1 probes no tcp
  r.paths.push_back(p);
  auto rep = ingest->handle(weft::proto::kBinaryContentType, weft::proto::encode_binary(r), now_ns(), "h1");
  ASSERT_EQ(rep.status, 200) << rep.body;
  EXPECT_EQ(body(rep)["refused"], 1);
  const PairFlows kept = ingest->flows().pair(Protocol::udp, "h1", "h2", now_ns());
  ASSERT_EQ(kept.flows.size(), 2u);
  EXPECT_EQ(kept.flows[0].paths.size(), 1u);
  EXPECT_TRUE(ingest->flows().pair(Protocol::udp, "h1", "made-up", now_ns()).flows.empty());
  EXPECT_TRUE(ingest->flows().pair(Protocol::tcp, "h1", "h3", now_ns()).flows.empty());
}

// A bound agent's traced paths are bounded before decoding, like its windows: one per flow of each
// target it may report, at least ReportPolicy::kMinPaths.
TEST_F(Policy, ABoundAgentsPathsAreBoundBeforeDecoding) {
  EXPECT_EQ(ingest->policy().max_paths("h1", now_ns()), ReportPolicy::kMinPaths);
  for (int i = 4; i < 70; ++i) add(i);
  const size_t bound = 68 * weft::proto::kMaxFlowsPerWindow;  // h1's 68 targets
  ASSERT_EQ(ingest->policy().max_paths("h1", now_ns()), bound);
  const int64_t t = now_ns() - 5'000'000'000;
  auto r = report("h1", {window("h2", t)});
  weft::proto::PathTrace p;
  p.target = "h2";
  p.traced_at_unix_ns = t;
  r.paths.assign(bound + 1, p);
  auto bin = ingest->handle(weft::proto::kBinaryContentType, weft::proto::encode_binary(r), now_ns(), "h1");
  EXPECT_EQ(bin.status, 400) << bin.body;
  EXPECT_NE(bin.body.find(std::to_string(bound)), std::string::npos) << bin.body;
  auto js = ingest->handle("application/json", weft::proto::encode_json(r), now_ns(), "h1");
  EXPECT_EQ(js.status, 400) << js.body;
  EXPECT_NE(js.body.find("more than " + std::to_string(bound) + " paths"), std::string::npos) << js.body;
  r.paths.resize(bound);
  EXPECT_EQ(
      ingest->handle(weft::proto::kBinaryContentType, weft::proto::encode_binary(r), now_ns(), "h1").status,
      200);
}

// The target check finds a report's windows whatever their order (in list order most are found by
// the next-in-list guess; out of order by search), and a target that leaves and comes back is
// listed again.
TEST_F(Policy, TargetsAreFoundInAnyOrderAndAfterComingBack) {
  for (int i = 4; i < 12; ++i) add(i);
  (void)ingest->policy().max_windows("h1", now_ns() - 60'000'000'000);
  const int64_t t = now_ns() - 5'000'000'000;
  std::vector<weft::proto::WindowStats> ws;
  for (int i : {11, 2, 10, 3, 4, 9, 5, 8, 6, 7}) ws.push_back(window("h" + std::to_string(i), t));
  ws.push_back(window("h99", t));  // not a target
  auto r = ingest->handle_report(report("h1", ws), now_ns());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body(r)["accepted"], 10);
  EXPECT_EQ(body(r)["refused"], 1);
  ASSERT_TRUE(mesh->remove_agent("h5"));
  add(5);  // back, in h1's list again
  auto again =
      ingest->handle_report(report("h1", {window("h5", t + 20'000'000'000)}), now_ns() + 20'000'000'000);
  EXPECT_EQ(body(again)["accepted"], 1) << again.body;
}
