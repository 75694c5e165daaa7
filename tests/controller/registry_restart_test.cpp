// The agent list survives a controller restart: a registration is kept in the store as received and
// replayed through the register parser at start. Agents alive just before the restart are up at
// once with unchanged pinglists; one that had fallen silent is still listed (down, out of every
// pinglist), and is up again when it reports, without registering again.
// Real controllers on 127.0.0.1 (port 0), with the SQLite store here and Redis in RedisStore* below
// (with_redis.sh runs those against a redis-server it starts).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include "controller/controller.hpp"
#include "lib/test_util.hpp"
#include "proto/registration.hpp"
#include "test_controller.hpp"

using namespace weft::controller;
using namespace weft::controller::testing;
using namespace weft::testlib;
using nlohmann::json;

namespace {

std::unique_ptr<Controller> start_controller(const std::string& store) {
  return start_test_controller(store, "t0k-restart-test", "udp, rdma", "agent_down_after: 2s\n");
}

httplib::Result post(Controller& c, const std::string& path, const std::string& body,
                     const std::string& type) {
  httplib::Client cli("127.0.0.1", c.bound_ports().at(0));
  return cli.Post(path, httplib::Headers{{"Authorization", "Bearer t0k-restart-test"}}, body, type);
}

json get(Controller& c, const std::string& path) {
  httplib::Client cli("127.0.0.1", c.bound_ports().at(0));
  auto res = cli.Get(path, httplib::Headers{{"Authorization", "Bearer t0k-restart-test"}});
  return res && res->status == 200 ? json::parse(res->body) : json{{"status", res ? res->status : -1}};
}

// UDP and one RDMA engine (rail 0), whose address must survive the restart as well.
std::string registration(const std::string& name, int i) {
  weft::proto::Registration r{
      name,     {fmt::format("10.9.0.{}", i)},   {weft::proto::Protocol::udp, weft::proto::Protocol::rdma},
      "v-test", static_cast<uint16_t>(7000 + i), 0};
  weft::proto::RdmaEndpoint e;
  e.device = "rxe0";
  e.port = 1;
  inet_pton(AF_INET6, fmt::format("::ffff:10.9.0.{}", i).c_str(), e.gid.data());
  e.gid_index = 1;
  e.qpn = static_cast<uint32_t>(100 + i);
  e.qkey = 0x11111111;
  r.rdma = {e};
  return weft::proto::registration_json(r);
}

std::map<std::string, json> agents_by_name(Controller& c) {
  std::map<std::string, json> out;
  json all = get(c, "/api/v1/agents");
  for (auto& a : all["agents"]) out[a["name"].get<std::string>()] = a;
  return out;
}

// Target names of one protocol in an agent's pinglist.
std::set<std::string> pinglist_targets(Controller& c, const std::string& name, const char* protocol = "udp") {
  std::set<std::string> out;
  json list = get(c, "/api/v1/pinglists/" + name);
  for (auto& p : list["protocols"])
    if (p["protocol"] == protocol)
      for (auto& t : p["targets"]) out.insert(t["name"].get<std::string>());
  return out;
}

// One report from `name` with a window towards `target` (a fresh start time each call).
int report(Controller& c, const std::string& name, const std::string& target) {
  static int64_t n = 0;
  weft::proto::Report r;
  r.agent = name;
  r.windows.push_back(window(target, now_ns() - 60'000'000'000 + ++n * 1'000'000));
  auto res =
      post(c, "/api/v1/report", weft::proto::encode_binary(r), std::string(weft::proto::kBinaryContentType));
  return res ? res->status : -1;
}

void agents_survive_a_restart(const std::string& store) {
  uint64_t version_before = 0;
  {
    auto c = start_controller(store);
    ASSERT_TRUE(c);
    for (int i = 1; i <= 3; ++i) {
      auto res = post(*c, "/api/v1/register", registration(fmt::format("keep{}", i), i), "application/json");
      ASSERT_TRUE(res && res->status == 200) << (res ? res->body : "no answer");
    }
    // A registration that fails to parse is refused and not kept.
    auto bad = post(*c, "/api/v1/register", R"({"name":"keep9","addresses":[],"protocols":["udp"]})",
                    "application/json");
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400);
    EXPECT_EQ(pinglist_targets(*c, "keep1"), (std::set<std::string>{"keep2", "keep3"}));
    EXPECT_EQ(pinglist_targets(*c, "keep1", "rdma"), (std::set<std::string>{"keep2", "keep3"}));
    // keep1 and keep2 keep reporting; keep3 falls silent and goes down (agent_down_after: 2s).
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(3200);
    while (std::chrono::steady_clock::now() < until) {
      ASSERT_EQ(report(*c, "keep1", "keep2"), 200);
      ASSERT_EQ(report(*c, "keep2", "keep1"), 200);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    auto agents = agents_by_name(*c);
    ASSERT_EQ(agents["keep3"]["state"], "down") << agents["keep3"].dump();
    EXPECT_EQ(pinglist_targets(*c, "keep1"), (std::set<std::string>{"keep2"}));
    version_before = get(*c, "/api/v1/pinglists/keep1")["version"].get<uint64_t>();
    c->stop();
  }
  auto c = start_controller(store);
  ASSERT_TRUE(c);
  auto agents = agents_by_name(*c);
  ASSERT_EQ(agents.size(), 3u) << get(*c, "/api/v1/agents").dump();
  for (int i = 1; i <= 3; ++i) {
    auto& a = agents[fmt::format("keep{}", i)];
    EXPECT_EQ(a["version"], "v-test");
    EXPECT_EQ(a["addresses"], json::array({fmt::format("10.9.0.{}", i)}));
    ASSERT_EQ(a["rdma"].size(), 1u) << a.dump();  // the engine's address came back with the rest
    EXPECT_EQ(a["rdma"][0]["qpn"], 100 + i);
  }
  // The agents that were reporting are up at once and the pinglists are what they were, so no
  // agent's probing changes across the restart (issue 14, defect 4: before, every restored agent
  // was down until it reported, and pinglists grew back one agent at a time).
  EXPECT_EQ(agents["keep1"]["state"], "up") << agents["keep1"].dump();
  EXPECT_EQ(agents["keep2"]["state"], "up");
  EXPECT_EQ(agents["keep3"]["state"], "down");  // silent before the restart: still down
  EXPECT_EQ(get(*c, "/api/v1/pinglists/keep1")["version"].get<uint64_t>(), version_before);
  EXPECT_EQ(pinglist_targets(*c, "keep1"), (std::set<std::string>{"keep2"}));
  EXPECT_EQ(pinglist_targets(*c, "keep1", "rdma"), (std::set<std::string>{"keep2"}));
  // keep3 reports again without registering: accepted, up, and back in keep1's pinglists
  // (RDMA too, with its stored engine address).
  ASSERT_EQ(report(*c, "keep3", "keep1"), 200);
  EXPECT_EQ(agents_by_name(*c)["keep3"]["state"], "up");
  EXPECT_EQ(pinglist_targets(*c, "keep1"), (std::set<std::string>{"keep2", "keep3"}));
  EXPECT_EQ(pinglist_targets(*c, "keep1", "rdma"), (std::set<std::string>{"keep2", "keep3"}));
}

}  // namespace

TEST(RegistryRestart, SqliteKeepsEveryAgent) {
  TempDir dir;
  agents_survive_a_restart("sqlite:" + dir.file("reg.db"));
}

TEST(RedisStoreRegistryRestart, KeepsEveryAgent) {
  const char* url = std::getenv("WEFT_TEST_REDIS");
  if (!url) GTEST_SKIP() << "WEFT_TEST_REDIS not set (run through with_redis.sh)";
  agents_survive_a_restart(url);
}

namespace {

// Issue 14: there was no way to remove an agent, so a mistyped name stayed "down" forever. DELETE
// forgets it (also in the store: a restart does not bring it back); a live agent needs ?force=1.
void agent_removal(const std::string& store) {
  {
    auto c = start_controller(store);
    ASSERT_TRUE(c);
    for (int i = 1; i <= 2; ++i)
      ASSERT_EQ(
          post(*c, "/api/v1/register", registration(fmt::format("rm{}", i), i), "application/json")->status,
          200);
    httplib::Client cli("127.0.0.1", c->bound_ports().at(0));
    // Removal is an admin action (controller/auth.hpp): the agents' token is refused.
    httplib::Headers auth{{"Authorization", "Bearer t0k-restart-test-admin"}};
    auto no_token = cli.Delete("/api/v1/agents/rm2");
    ASSERT_TRUE(no_token);
    EXPECT_EQ(no_token->status, 401);
    auto agent_token =
        cli.Delete("/api/v1/agents/rm2?force=1", {{"Authorization", "Bearer t0k-restart-test"}});
    ASSERT_TRUE(agent_token);
    EXPECT_EQ(agent_token->status, 403);
    auto live = cli.Delete("/api/v1/agents/rm2", auth);
    ASSERT_TRUE(live);
    EXPECT_EQ(live->status, 409);
    EXPECT_NE(live->body.find("stop it first"), std::string::npos) << live->body;
    auto unknown = cli.Delete("/api/v1/agents/nosuch", auth);
    ASSERT_TRUE(unknown);
    EXPECT_EQ(unknown->status, 404);
    auto gone = cli.Delete("/api/v1/agents/rm2?force=1", auth);
    ASSERT_TRUE(gone);
    EXPECT_EQ(gone->status, 200) << gone->body;
    EXPECT_EQ(agents_by_name(*c).count("rm2"), 0u);
    EXPECT_EQ(pinglist_targets(*c, "rm1").count("rm2"), 0u);
    c->stop();
  }
  auto c = start_controller(store);
  ASSERT_TRUE(c);
  auto agents = agents_by_name(*c);
  EXPECT_EQ(agents.count("rm1"), 1u);
  EXPECT_EQ(agents.count("rm2"), 0u) << "a removed agent came back after a restart";
}

}  // namespace

TEST(RegistryRestart, SqliteAgentRemoval) {
  TempDir dir;
  agent_removal("sqlite:" + dir.file("rm.db"));
}

TEST(RedisStoreRegistryRestart, AgentRemoval) {
  const char* url = std::getenv("WEFT_TEST_REDIS");
  if (!url) GTEST_SKIP() << "WEFT_TEST_REDIS not set (run through with_redis.sh)";
  agent_removal(url);
}
