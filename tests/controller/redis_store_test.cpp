// The Redis store against a real redis-server (with_redis.sh starts one on loopback and sets
// WEFT_TEST_REDIS). Without it these tests skip.
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "controller/ingest.hpp"
#include "test_util.hpp"

using namespace weft::controller;
using namespace weft::controller::testing;
using weft::probe::Protocol;

namespace {
std::string redis_url() {
  const char* u = std::getenv("WEFT_TEST_REDIS");
  return u ? u : "";
}
}  // namespace

TEST(RedisStore, AppendHistoryRestartAndDedup) {
  if (redis_url().empty()) GTEST_SKIP() << "WEFT_TEST_REDIS not set (run through with_redis.sh)";
  auto cfg = std::make_shared<const Config>(*parse_config("groups:\n  - {name: all, protocols: [udp], members: ['*']}\n", "<t>"));
  int64_t t = now_ns() - 30'000'000'000;
  std::vector<weft::probe::WindowStats> ws;
  for (int i = 0; i < 4; ++i) ws.push_back(window("r2", t + i * 1'000'000'000LL, 100, static_cast<uint64_t>(i * 10)));
  weft::agent::Report rep;
  rep.agent = "r1";
  rep.windows = ws;
  {
    auto s = open_store(redis_url());
    ASSERT_TRUE(s) << s.error().message;
    Mesh mesh(cfg);
    Ingest ingest(mesh, **s);
    mesh.register_agent({"r1", {"10.0.0.1"}, {Protocol::udp}, "", 7777, 0}, now_ns());
    auto r = ingest.handle_report(rep, now_ns());
    ASSERT_EQ(r.status, 200) << r.body;
    auto h = (*s)->history(Protocol::udp, "r1", "r2", 0, INT64_MAX, 100);
    ASSERT_TRUE(h) << h.error().message;
    ASSERT_EQ(h->size(), 4u);
    EXPECT_EQ((*h)[3].lost, 30u);
    EXPECT_EQ((*s)->history(Protocol::udp, "r1", "r2", t + 2'000'000'000, INT64_MAX, 100)->size(), 2u);
  }
  // A new controller process on the same Redis: state comes back, resends are duplicates.
  auto s = open_store(redis_url());
  ASSERT_TRUE(s);
  Mesh mesh(cfg);
  ASSERT_TRUE((*s)->load_recent(t - 1, [&](const std::string& src, auto w, int64_t rx) { mesh.restore(src, w, rx); }));
  auto l = mesh.latest_pair(Protocol::udp, "r1", "r2");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->window.lost, 30u);
  Ingest ingest(mesh, **s);
  mesh.register_agent({"r1", {"10.0.0.1"}, {Protocol::udp}, "", 7777, 0}, now_ns());
  auto again = ingest.handle_report(rep, now_ns());
  EXPECT_EQ(nlohmann::json::parse(again.body)["duplicate"], 4);
  EXPECT_EQ((*s)->history(Protocol::udp, "r1", "r2", 0, INT64_MAX, 100)->size(), 4u);
  ASSERT_TRUE((*s)->apply_retention(t + 2'000'000'000));
  EXPECT_EQ((*s)->history(Protocol::udp, "r1", "r2", 0, INT64_MAX, 100)->size(), 2u);
}

TEST(RedisStore, UnreachableServerIsAClearError) {
  if (redis_url().empty()) GTEST_SKIP() << "WEFT_TEST_REDIS not set";
  auto s = open_store("redis://127.0.0.1:1");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("127.0.0.1:1"), std::string::npos) << s.error().message;
}
