// Ingest: validation, all-or-nothing, dedup of resends, and the SQLite store across a restart.
#include "controller/ingest.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lib/test_util.hpp"

using namespace weft::controller;
using namespace weft::testlib;
using weft::proto::Protocol;

namespace {

std::shared_ptr<const Config> test_config() {
  auto c = parse_config("groups:\n  - {name: all, protocols: [udp, tcp], members: ['*']}\n", "<test>");
  return std::make_shared<const Config>(*c);
}

void register_all(Mesh& m, std::initializer_list<const char*> names) {
  int i = 1;
  for (const char* n : names)
    m.register_agent(
        {n, {"10.0.0." + std::to_string(i++)}, {Protocol::udp, Protocol::tcp}, "test", 7777, 7778}, now_ns());
}

weft::proto::Report report(const std::string& agent, std::vector<weft::proto::WindowStats> ws) {
  weft::proto::Report r;
  r.agent = agent;
  r.windows = std::move(ws);
  return r;
}

nlohmann::json body(const IngestReply& r) { return nlohmann::json::parse(r.body); }

// A store that fails on demand, to check that a failed write leaves no trace.
class FlakyStore final : public Store {
 public:
  bool failing = false;
  std::vector<weft::proto::WindowStats> stored;
  weft::Status append(const std::string&, std::span<const weft::proto::WindowStats> ws, int64_t,
                      std::string_view) override {
    if (failing) return weft::fail("disk on fire");
    stored.insert(stored.end(), ws.begin(), ws.end());
    return {};
  }
  weft::Result<std::vector<weft::proto::WindowStats>> history(Protocol, const std::string&,
                                                              const std::string&, int64_t, int64_t,
                                                              size_t) override {
    return stored;
  }
  weft::Status load_recent(int64_t, const RestoreFn&) override { return {}; }
  weft::Status save_registration(const std::string&, std::string_view, int64_t) override { return {}; }
  weft::Status remove_registration(const std::string&) override { return {}; }
  weft::Status load_registrations(const RegistrationFn&) override { return {}; }
  weft::Status apply_retention(int64_t) override { return {}; }
  StoreInfo info() const override { return {"flaky", "", !failing, ""}; }
};

struct Fixture : ::testing::Test {
  TempDir dir;
  std::unique_ptr<Store> store;
  std::unique_ptr<Mesh> mesh;
  std::unique_ptr<Ingest> ingest;
  void open() {
    auto s = open_sqlite_store(dir.file("h.db"));
    ASSERT_TRUE(s) << s.error().message;
    store = std::move(*s);
    mesh = std::make_unique<Mesh>(test_config());
    ingest = std::make_unique<Ingest>(*mesh, *store);
  }
  void SetUp() override { open(); }
};

}  // namespace

TEST_F(Fixture, AcceptsAndServesLatest) {
  register_all(*mesh, {"h1", "h2", "h3"});
  int64_t t = now_ns() - 10'000'000'000;
  auto r = ingest->handle_report(report("h1", {window("h2", t, 100, 30), window("h3", t)}), now_ns());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body(r)["accepted"], 2);
  auto latest = mesh->latest(Protocol::udp);
  ASSERT_EQ(latest.size(), 2u);
  EXPECT_EQ(latest[0].src, "h1");
  EXPECT_EQ(latest[0].dst, "h2");
  EXPECT_DOUBLE_EQ(latest[0].loss_ratio(), 0.3);
  EXPECT_EQ(mesh->ingest_counters().windows_accepted, 2u);
}

TEST_F(Fixture, ResendIsNotCountedTwice) {
  register_all(*mesh, {"h1", "h2"});
  int64_t t = now_ns() - 10'000'000'000;
  auto rep = report("h1", {window("h2", t), window("h2", t + 1'000'000'000)});
  ASSERT_EQ(ingest->handle_report(rep, now_ns()).status, 200);
  auto again = ingest->handle_report(rep, now_ns());
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(body(again)["accepted"], 0);
  EXPECT_EQ(body(again)["duplicate"], 2);
  auto h = store->history(Protocol::udp, "h1", "h2", 0, INT64_MAX, 1000);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->size(), 2u);
  // The same window twice inside one request is also caught.
  auto twice = ingest->handle_report(
      report("h1", {window("h2", t + 5'000'000'000), window("h2", t + 5'000'000'000)}), now_ns());
  EXPECT_EQ(body(twice)["accepted"], 1);
  EXPECT_EQ(body(twice)["duplicate"], 1);
}

// The mesh guesses a window's pair from its position in the agent's previous report; reports in
// another order, or with another protocol at a position, must land on the right pairs all the same.
TEST_F(Fixture, PairsAreRightWhateverTheWindowOrder) {
  register_all(*mesh, {"h1", "h2", "h3"});
  int64_t t = now_ns() - 100'000'000'000;
  auto sec = [&](int i) { return t + i * 1'000'000'000LL; };
  ASSERT_EQ(ingest
                ->handle_report(report("h1", {window("h2", sec(0), 100, 2), window("h3", sec(0), 100, 3)}),
                                now_ns())
                .status,
            200);
  auto swapped =
      ingest->handle_report(report("h1", {window("h3", sec(1), 100, 13), window("h2", sec(1), 100, 12),
                                          window("h2", sec(1), 100, 22, Protocol::tcp)}),
                            now_ns());
  EXPECT_EQ(body(swapped)["accepted"], 3);
  // The first report again, in the first order: all duplicates (the dedup state followed the pairs).
  auto again = ingest->handle_report(report("h1", {window("h3", sec(0), 100, 3), window("h2", sec(0), 100, 2),
                                                   window("h2", sec(1), 100, 22, Protocol::tcp)}),
                                     now_ns());
  EXPECT_EQ(body(again)["duplicate"], 3);
  EXPECT_EQ(mesh->latest_pair(Protocol::udp, "h1", "h2")->window.lost, 12u);
  EXPECT_EQ(mesh->latest_pair(Protocol::udp, "h1", "h3")->window.lost, 13u);
  EXPECT_EQ(mesh->latest_pair(Protocol::tcp, "h1", "h2")->window.lost, 22u);
  EXPECT_FALSE(mesh->latest_pair(Protocol::tcp, "h1", "h3"));
  EXPECT_EQ(mesh->pair_count(), 3u);
}

TEST_F(Fixture, OutOfOrderWindowsAreKeptButLatestStaysNewest) {
  register_all(*mesh, {"h1", "h2"});
  int64_t t = now_ns() - 100'000'000'000;
  ASSERT_EQ(ingest->handle_report(report("h1", {window("h2", t + 3'000'000'000)}), now_ns()).status, 200);
  auto older = ingest->handle_report(report("h1", {window("h2", t + 1'000'000'000, 100, 50)}), now_ns());
  EXPECT_EQ(body(older)["accepted"], 1);
  auto l = mesh->latest_pair(Protocol::udp, "h1", "h2");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->window.start_unix_ns, t + 3'000'000'000);
  // Once the dedup ring is full, anything older than all of it is refused as stale, not guessed.
  for (int i = 10; i < 10 + int(Mesh::kDedupDepth); ++i)
    ingest->handle_report(report("h1", {window("h2", t + i * 1'000'000'000LL)}), now_ns());
  auto stale = ingest->handle_report(report("h1", {window("h2", t + 2'000'000'000)}), now_ns());
  EXPECT_EQ(body(stale)["stale"], 1);
}

// latest_pair (one pair) and latest (every pair) give the same PairWindow, the pair's RTT baseline
// included: latest_pair used to leave baseline_rtt_ns at 0.
TEST_F(Fixture, LatestPairCarriesTheBaselineAsLatestDoes) {
  register_all(*mesh, {"h1", "h2"});
  int64_t t = now_ns() - 100'000'000'000;
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(ingest->handle_report(report("h1", {window("h2", t + i * 1'000'000'000LL)}), now_ns()).status,
              200);
  auto one = mesh->latest_pair(Protocol::udp, "h1", "h2");
  auto all = mesh->latest(Protocol::udp);
  ASSERT_TRUE(one);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_GT(all[0].baseline_rtt_ns, 0);
  EXPECT_EQ(one->baseline_rtt_ns, all[0].baseline_rtt_ns);
  EXPECT_EQ(one->received_unix_ns, all[0].received_unix_ns);
  EXPECT_EQ(one->window.target, "h2");
}

TEST_F(Fixture, InvalidRequestsAreRejectedWhole) {
  register_all(*mesh, {"h1", "h2", "h3"});
  int64_t t = now_ns() - 10'000'000'000;
  auto bad = window("h3", t);
  bad.received = 101;  // more than sent
  auto r = ingest->handle_report(report("h1", {window("h2", t), bad}), now_ns());
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(body(r)["error"].get<std::string>().find("windows[1]"), std::string::npos) << r.body;
  EXPECT_TRUE(mesh->latest(Protocol::udp).empty());
  EXPECT_TRUE(store->history(Protocol::udp, "h1", "h2", 0, INT64_MAX, 10)->empty());

  std::vector<std::pair<const char*, std::function<void(weft::proto::WindowStats&)>>> cases = {
      {"future",
       [&](auto& w) {
         w.end_unix_ns = now_ns() + 3600'000'000'000;
         w.start_unix_ns = w.end_unix_ns - 1;
       }},
      {"reversed", [](auto& w) { w.end_unix_ns = w.start_unix_ns - 1; }},
      {"overflowing span", [](auto& w) { w.start_unix_ns = INT64_MIN + 1; }},
      {"percentiles", [](auto& w) { w.network_rtt.p50_ns = w.network_rtt.max_ns + 1; }},
      {"negative rtt", [](auto& w) { w.network_rtt.min_ns = -5; }},
      {"late>lost", [](auto& w) { w.late = 1; }},
      {"bad name", [](auto& w) { w.target = "h2; DROP TABLE"; }},
      {"self", [](auto& w) { w.target = "h1"; }},
      {"count>received", [](auto& w) { w.network_rtt.count = 1000; }},
  };
  for (auto& [what, mutate] : cases) {
    auto w = window("h2", t);
    mutate(w);
    EXPECT_EQ(ingest->handle_report(report("h1", {w}), now_ns()).status, 400) << what;
  }
  EXPECT_EQ(ingest->handle_report(report("stranger", {window("h2", t)}), now_ns()).status, 409);
  EXPECT_EQ(mesh->ingest_counters().windows_accepted, 0u);
}

TEST_F(Fixture, DecodesBothEncodingsTheSame) {
  register_all(*mesh, {"h1", "h2"});
  int64_t t = now_ns() - 10'000'000'000;
  auto rep = report("h1", {window("h2", t, 50, 5, Protocol::tcp)});
  rep.health.cpu_percent = 1.5;
  rep.alarms.push_back({"prober_restarted", "udp prober died", t});
  auto j = ingest->handle("application/json", weft::proto::encode_json(rep), now_ns());
  ASSERT_EQ(j.status, 200) << j.body;
  rep.windows[0].start_unix_ns += 1'000'000'000;
  rep.windows[0].end_unix_ns += 1'000'000'000;
  auto b =
      ingest->handle(std::string(weft::proto::kBinaryContentType), weft::proto::encode_binary(rep), now_ns());
  ASSERT_EQ(b.status, 200) << b.body;
  auto h = store->history(Protocol::tcp, "h1", "h2", 0, INT64_MAX, 10);
  ASSERT_EQ(h->size(), 2u);
  EXPECT_EQ((*h)[0].network_rtt.p99_ns, 90'000);
  EXPECT_EQ((*h)[1].lost, 5u);
  auto agents = mesh->agents();
  EXPECT_DOUBLE_EQ(agents[0].health.cpu_percent, 1.5);
  ASSERT_EQ(agents[0].alarms.size(), 2u);  // sent twice, reported twice: alarms are events
  EXPECT_EQ(ingest->handle("text/plain", "x", now_ns()).status, 415);
  EXPECT_EQ(ingest->handle("application/json", "{\"agent\":", now_ns()).status, 400);
  EXPECT_EQ(ingest->handle("application/json", "{\"agent\":\"h1\",\"windows\":[{\"protocol\":7}]}", now_ns())
                .status,
            400);
  EXPECT_EQ(ingest->handle(std::string(weft::proto::kBinaryContentType), "WFT1\xff\xff", now_ns()).status,
            400);
}

TEST_F(Fixture, SqliteHistoryAndDedupSurviveARestart) {
  register_all(*mesh, {"h1", "h2", "h3"});
  int64_t t = now_ns() - 60'000'000'000;
  std::vector<weft::proto::WindowStats> sent;
  for (int i = 0; i < 5; ++i)
    sent.push_back(window("h2", t + i * 1'000'000'000LL, 100, static_cast<uint64_t>(i)));
  ASSERT_EQ(ingest->handle_report(report("h1", sent), now_ns()).status, 200);
  ASSERT_EQ(ingest->handle_report(report("h3", {window("h1", t)}), now_ns()).status, 200);

  ingest.reset();
  mesh.reset();
  store.reset();  // the controller stops
  open();         // and starts again on the same file
  ASSERT_TRUE(store->load_recent(
      t - 1, [&](const std::string& src, auto ws, int64_t rx) { mesh->restore(src, ws, rx); }));
  auto l = mesh->latest_pair(Protocol::udp, "h1", "h2");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->window.lost, 4u);
  EXPECT_TRUE(mesh->latest_pair(Protocol::udp, "h3", "h1"));
  auto h = store->history(Protocol::udp, "h1", "h2", 0, INT64_MAX, 100);
  ASSERT_EQ(h->size(), 5u);
  // The agent resends the last batch because it never saw the answer: nothing is counted twice.
  register_all(*mesh, {"h1", "h2", "h3"});
  auto again = ingest->handle_report(report("h1", sent), now_ns());
  EXPECT_EQ(body(again)["duplicate"], 5);
  EXPECT_EQ(store->history(Protocol::udp, "h1", "h2", 0, INT64_MAX, 100)->size(), 5u);
  // since/limit
  EXPECT_EQ(store->history(Protocol::udp, "h1", "h2", t + 2'000'000'000, INT64_MAX, 100)->size(), 3u);
  EXPECT_EQ(store->history(Protocol::udp, "h1", "h2", 0, INT64_MAX, 2)->back().start_unix_ns,
            t + 4'000'000'000);
}

TEST(IngestStoreFailure, NothingIsKeptAndTheRetryCounts) {
  FlakyStore store;
  Mesh mesh(test_config());
  Ingest ingest(mesh, store);
  register_all(mesh, {"h1", "h2"});
  int64_t t = now_ns() - 10'000'000'000;
  auto rep = report("h1", {window("h2", t)});
  store.failing = true;
  EXPECT_EQ(ingest.handle_report(rep, now_ns()).status, 503);
  EXPECT_FALSE(mesh.latest_pair(Protocol::udp, "h1", "h2"));
  store.failing = false;
  auto ok = ingest.handle_report(rep, now_ns());
  EXPECT_EQ(body(ok)["accepted"], 1);  // the failed attempt left no dedup trace
  EXPECT_EQ(store.stored.size(), 1u);
}

// Liveness comes from the agents' own contact: while the store fails (503, the batch is sent
// again), an agent that keeps reporting is not marked down; one that does not report is.
TEST(IngestStoreFailure, AgentsThatReportStayUp) {
  FlakyStore store;
  auto cfg = parse_config(
      "agent_down_after: 2s\ngroups:\n  - {name: all, protocols: [udp], members: ['*']}\n", "<t>");
  Mesh mesh(std::make_shared<const Config>(*cfg));
  Ingest ingest(mesh, store);
  const int64_t t0 = now_ns();
  for (const char* n : {"h1", "h2"}) mesh.register_agent({n, {"10.0.0.9"}, {Protocol::udp}, "", 7777, 0}, t0);
  store.failing = true;
  EXPECT_EQ(
      ingest.handle_report(report("h1", {window("h2", t0 - 10'000'000'000)}), t0 + 3'000'000'000).status,
      503);
  EXPECT_EQ(mesh.sweep(t0 + 3'500'000'000), std::vector<std::string>{"h2"});
  EXPECT_FALSE(mesh.latest_pair(Protocol::udp, "h1", "h2"));  // nothing of the batch was kept
}

TEST(MeshRegistry, SilentAgentsGoDownAndComeBack) {
  auto cfg = parse_config(
      "agent_down_after: 2s\ngroups:\n  - {name: all, protocols: [udp], members: ['*']}\n", "<t>");
  Mesh mesh(std::make_shared<const Config>(*cfg));
  int64_t t0 = now_ns();
  for (const char* n : {"h1", "h2", "h3"})
    mesh.register_agent({n, {"10.0.0.9"}, {Protocol::udp}, "", 7777, 0}, t0);
  EXPECT_EQ(mesh.pinglist_for("h1").target_count(), 2u);
  weft::proto::Health h;
  mesh.touch("h1", h, {}, t0 + 3'000'000'000);
  mesh.touch("h2", h, {}, t0 + 3'000'000'000);
  auto down = mesh.sweep(t0 + 3'500'000'000);
  EXPECT_EQ(down, std::vector<std::string>{"h3"});
  EXPECT_EQ(mesh.pinglist_for("h1").target_count(), 1u);
  auto agents = mesh.agents();
  EXPECT_EQ(agents[2].state, AgentState::down);
  EXPECT_EQ(agents[2].alarms.back().kind, "agent_down");
  mesh.touch("h3", h, {}, t0 + 4'000'000'000);
  EXPECT_EQ(mesh.pinglist_for("h1").target_count(), 2u);
  EXPECT_TRUE(mesh.agents()[2].alarms.empty());
}

// A group's mesh (GET /api/v1/mesh?group=...) is read through latest_between(): only the pairs
// between the group's members (an arrow: from its `from` to its `to`), the same whether the member
// index is built yet or not, and the same as filtering the whole mesh.
TEST(MeshRegistry, GroupMeshHoldsOnlyItsOwnPairs) {
  auto cfg = parse_config(
      "groups:\n  - {name: rack-a, protocols: [udp], members: ['a*']}\n"
      "  - {name: rack-b, protocols: [udp], members: ['b*']}\n"
      "arrows:\n  - {name: a-to-b, protocols: [udp], from: ['a*'], to: ['b*']}\n",
      "<t>");
  Mesh mesh(std::make_shared<const Config>(*cfg));
  int64_t t0 = now_ns() - 20'000'000'000;
  const std::vector<std::string> hosts{"a1", "a2", "b1", "b2"};
  for (const auto& n : hosts) mesh.register_agent({n, {"10.0.0.9"}, {Protocol::udp}, "", 7777, 0}, t0);
  for (const auto& s : hosts) {
    std::vector<weft::proto::WindowStats> ws;
    for (const auto& d : hosts)
      if (d != s) ws.push_back(window(d, t0));
    mesh.restore(s, ws, t0);
  }
  auto pairs = [](const std::vector<PairWindow>& v) {
    std::vector<std::string> out;
    for (const auto& pw : v) {
      EXPECT_EQ(pw.window.target, pw.dst);
      out.push_back(pw.src + ">" + pw.dst);
    }
    return out;
  };
  auto between = [&](const std::string& group) {
    auto ends = mesh.group_ends(group);
    EXPECT_TRUE(ends) << group;
    return pairs(mesh.latest_between(Protocol::udp, ends->from, ends->to));
  };
  EXPECT_FALSE(mesh.group_ends("rack-c"));
  // Before any pinglist is computed (no member index yet): from the config's globs.
  EXPECT_EQ(between("rack-a"), (std::vector<std::string>{"a1>a2", "a2>a1"}));
  EXPECT_EQ(between("a-to-b"), (std::vector<std::string>{"a1>b1", "a1>b2", "a2>b1", "a2>b2"}));
  // With the member index built (the first pinglist builds it): the same answer.
  mesh.pinglist_for("a1");
  EXPECT_EQ(between("rack-b"), (std::vector<std::string>{"b1>b2", "b2>b1"}));
  EXPECT_EQ(between("a-to-b"), (std::vector<std::string>{"a1>b1", "a1>b2", "a2>b1", "a2>b2"}));
  EXPECT_EQ(pairs(mesh.latest(Protocol::udp)).size(), 12u);
  EXPECT_TRUE(mesh.latest_between(Protocol::tcp, hosts, hosts).empty());
  // The dashboard's compact copy (latest_cells) holds the same pairs, in the same order, with the
  // same numbers as latest() and latest_between().
  auto cells_pairs = [](const MeshCells& c) {
    std::vector<std::string> out;
    for (const auto& p : c.pairs) out.push_back(c.names.at(p.src) + ">" + c.names.at(p.dst));
    return out;
  };
  EXPECT_EQ(cells_pairs(mesh.latest_cells(Protocol::udp)), pairs(mesh.latest(Protocol::udp)));
  {
    auto ends = mesh.group_ends("a-to-b");
    ASSERT_TRUE(ends);
    EXPECT_EQ(cells_pairs(mesh.latest_cells(Protocol::udp, &ends->from, &ends->to)), between("a-to-b"));
    const auto full = mesh.latest_between(Protocol::udp, ends->from, ends->to);
    const auto cells = mesh.latest_cells(Protocol::udp, &ends->from, &ends->to);
    ASSERT_EQ(full.size(), cells.pairs.size());
    for (size_t i = 0; i < full.size(); ++i) {
      EXPECT_EQ(cells.pairs[i].sent, full[i].window.sent);
      EXPECT_EQ(cells.pairs[i].lost, full[i].window.lost);
      EXPECT_EQ(cells.pairs[i].end_unix_ns, full[i].window.end_unix_ns);
      EXPECT_EQ(cells.pairs[i].p50_ns, full[i].window.network_rtt.p50_ns);
      EXPECT_EQ(cells.pairs[i].rtt_count, full[i].window.network_rtt.count);
    }
  }
  EXPECT_TRUE(mesh.latest_cells(Protocol::tcp).pairs.empty());
  // A removed agent leaves its group's mesh.
  mesh.remove_agent("a2");
  EXPECT_EQ(between("rack-a"), std::vector<std::string>{});
  // touch() answers the report with the pinglist version, as pinglist_for() has it.
  EXPECT_EQ(mesh.touch("b1", weft::proto::Health{}, {}, t0), mesh.pinglist_for("b1").version);
}
