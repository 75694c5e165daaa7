// GET /api/v1/agents in pages (?limit=N&after=NAME): a client walks a 10,000-agent fleet in pieces
// instead of one 250-500 ms render; pages follow name order, `next` names where to go on, and the
// walk sees every agent exactly once. Without parameters the answer is the whole list, as before.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "controller/controller.hpp"
#include "lib/test_util.hpp"
#include "proto/registration.hpp"
#include "test_controller.hpp"

using namespace weft::controller;
using namespace weft::controller::testing;
using namespace weft::testlib;

TEST(AgentsPage, PagesWalkTheFleetInNameOrder) {
  TempDir dir;
  auto c = start_test_controller("sqlite:" + dir.file("pages.db"), "t0k-pages");
  ASSERT_TRUE(c);
  httplib::Client cli("127.0.0.1", c->bound_ports().at(0));
  httplib::Headers auth{{"Authorization", "Bearer t0k-pages"}};
  // Registered out of order: pages come in name order all the same.
  const std::vector<std::string> names = {"h5", "h1", "h4", "h2", "h3"};
  for (size_t i = 0; i < names.size(); ++i) {
    weft::proto::Registration r{
        names[i], {fmt::format("10.0.0.{}", i + 1)}, {weft::proto::Protocol::udp}, "v-test", 7777, 0};
    auto res = cli.Post("/api/v1/register", auth, weft::proto::registration_json(r), "application/json");
    ASSERT_TRUE(res && res->status == 200) << (res ? res->body : "no answer");
  }
  std::vector<std::string> walked;
  std::string after;
  for (int page = 0; page < 10; ++page) {
    auto res = cli.Get(fmt::format("/api/v1/agents?limit=2&after={}", after));
    ASSERT_TRUE(res && res->status == 200) << (res ? res->body : "no answer");
    auto j = nlohmann::json::parse(res->body);
    EXPECT_LE(j["agents"].size(), 2u);
    for (const auto& a : j["agents"]) walked.push_back(a["name"]);
    if (j["next"].is_null()) break;
    EXPECT_EQ(j["next"], walked.back());
    after = j["next"];
  }
  EXPECT_EQ(walked, (std::vector<std::string>{"h1", "h2", "h3", "h4", "h5"}));
  // A page's agents are the same objects as in the whole list.
  auto one = cli.Get("/api/v1/agents?limit=1&after=h3");
  ASSERT_TRUE(one && one->status == 200);
  auto p = nlohmann::json::parse(one->body);
  ASSERT_EQ(p["agents"].size(), 1u);
  EXPECT_EQ(p["agents"][0]["name"], "h4");
  EXPECT_EQ(p["agents"][0]["addresses"], nlohmann::json({"10.0.0.3"}));
  EXPECT_EQ(p["next"], "h4");
  auto all = cli.Get("/api/v1/agents");
  ASSERT_TRUE(all && all->status == 200);
  auto w = nlohmann::json::parse(all->body);
  EXPECT_EQ(w["agents"].size(), names.size());
  EXPECT_FALSE(w.contains("next"));
  // Bad limits are refused.
  for (const char* bad : {"0", "-1", "x", "10001", ""}) {
    auto r = cli.Get(fmt::format("/api/v1/agents?limit={}", bad));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << bad;
  }
  c->stop();
}
