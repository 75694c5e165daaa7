// The Redis store against a real redis-server (with_redis.sh starts one on loopback and sets
// WEFT_TEST_REDIS). Without it these tests skip.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controller/ingest.hpp"
#include "lib/test_util.hpp"

using namespace weft::controller;
using namespace weft::testlib;
using weft::proto::Protocol;

namespace {
std::string redis_url() {
  const char* u = std::getenv("WEFT_TEST_REDIS");
  return u ? u : "";
}
// A command through a connection of our own, to see (or set up) what other clients of the Redis
// see; the reply's string, or "<nil>".
std::string redis_run(const std::vector<std::string>& args) {
  std::string hp = redis_url().substr(8);  // with_redis.sh gives redis://127.0.0.1:PORT
  redisContext* c =
      redisConnect(hp.substr(0, hp.rfind(':')).c_str(), std::stoi(hp.substr(hp.rfind(':') + 1)));
  if (!c || c->err) {
    if (c) redisFree(c);
    return "<no connection>";
  }
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r =
      static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()));
  std::string out = r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
                        ? std::string(r->str, r->len)
                        : "<nil>";
  if (r) freeReplyObject(r);
  redisFree(c);
  return out;
}

std::string redis_hget(const std::string& key, const std::string& field) {
  return redis_run({"HGET", key, field});
}

}  // namespace

TEST(RedisStore, LatestOnlyMovesForward) {
  if (redis_url().empty()) GTEST_SKIP() << "WEFT_TEST_REDIS not set (run through with_redis.sh)";
  auto s = open_store(redis_url());
  ASSERT_TRUE(s) << s.error().message;
  int64_t t = now_ns() - 60'000'000'000;
  auto newer = window("fwd2", t + 3'000'000'000, 100, 7);
  auto older = window("fwd2", t + 1'000'000'000, 100, 2);
  ASSERT_TRUE((*s)->append("fwd1", std::span(&newer, 1), now_ns()));
  // A late window arrives after a newer one (e.g. a resend after a timeout): history gets it,
  // the latest stays the newer window.
  ASSERT_TRUE((*s)->append("fwd1", std::span(&older, 1), now_ns()));
  auto latest = nlohmann::json::parse(redis_hget("weft:{fwd1}:latest:udp", "fwd2"), nullptr, false);
  ASSERT_TRUE(latest.is_object()) << redis_hget("weft:{fwd1}:latest:udp", "fwd2");
  EXPECT_EQ(latest["start_unix_ns"].get<int64_t>(), newer.start_unix_ns);
  EXPECT_EQ(latest["lost"].get<uint64_t>(), 7u);
  EXPECT_EQ((*s)->history(Protocol::udp, "fwd1", "fwd2", 0, INT64_MAX, 100)->size(), 2u);
  // A newer one still replaces it, and within one batch the newest of the pair wins.
  auto newest = window("fwd2", t + 5'000'000'000, 100, 9);
  std::vector<weft::proto::WindowStats> batch{newest, window("fwd2", t + 4'000'000'000, 100, 1)};
  ASSERT_TRUE((*s)->append("fwd1", batch, now_ns()));
  latest = nlohmann::json::parse(redis_hget("weft:{fwd1}:latest:udp", "fwd2"), nullptr, false);
  ASSERT_TRUE(latest.is_object());
  EXPECT_EQ(latest["start_unix_ns"].get<int64_t>(), newest.start_unix_ns);
  EXPECT_EQ(latest["lost"].get<uint64_t>(), 9u);
}

TEST(RedisStore, AppendHistoryRestartAndDedup) {
  if (redis_url().empty()) GTEST_SKIP() << "WEFT_TEST_REDIS not set (run through with_redis.sh)";
  auto cfg = std::make_shared<const Config>(
      *parse_config("groups:\n  - {name: all, protocols: [udp], members: ['*']}\n", "<t>"));
  int64_t t = now_ns() - 30'000'000'000;
  std::vector<weft::proto::WindowStats> ws;
  for (int i = 0; i < 4; ++i)
    ws.push_back(window("r2", t + i * 1'000'000'000LL, 100, static_cast<uint64_t>(i * 10)));
  weft::proto::Report rep;
  rep.agent = "r1";
  rep.windows = ws;
  {
    auto s = open_store(redis_url());
    ASSERT_TRUE(s) << s.error().message;
    Mesh mesh(cfg);
    Ingest ingest(mesh, **s);
    // r2 registered too: windows are kept only to targets of r1's pinglist (report_policy.hpp).
    for (const char* n : {"r1", "r2"})
      mesh.register_agent({n, {"10.0.0.1"}, {Protocol::udp}, "", 7777, 0}, now_ns());
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
  ASSERT_TRUE((*s)->load_recent(
      t - 1, [&](const std::string& src, auto w, int64_t rx) { mesh.restore(src, w, rx); }));
  auto l = mesh.latest_pair(Protocol::udp, "r1", "r2");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->window.lost, 30u);
  Ingest ingest(mesh, **s);
  for (const char* n : {"r1", "r2"})
    mesh.register_agent({n, {"10.0.0.1"}, {Protocol::udp}, "", 7777, 0}, now_ns());
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
  // Start-up retries this kind (waiting may cure it), not a malformed URL.
  EXPECT_EQ(s.error().code, kStoreUnreachable) << s.error().message;
  auto bad = open_store("redis://127.0.0.1:99999");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().code, kStoreUnreachable) << bad.error().message;
}

// MULTI/EXEC queues commands without running them: one that fails when EXEC runs it (here a key of
// the wrong type) shows only inside EXEC's reply, and the registration must then fail, not be
// answered as kept.
TEST(RedisStore, RegistrationFailingInsideTheTransactionIsAnError) {
  if (redis_url().empty()) GTEST_SKIP() << "WEFT_TEST_REDIS not set (run through with_redis.sh)";
  auto s = open_store(redis_url());
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_EQ(redis_run({"SET", "weft:{agents}:registered", "not-a-hash"}), "OK");
  auto st = (*s)->save_registration("wrongtype1", R"({"name":"wrongtype1"})", now_ns());
  EXPECT_FALSE(st);
  if (!st) {
    EXPECT_NE(st.error().message.find("WRONGTYPE"), std::string::npos) << st.error().message;
  }
  redis_run({"DEL", "weft:{agents}:registered"});
  redis_run({"HDEL", "weft:{agents}", "wrongtype1"});
  EXPECT_TRUE((*s)->save_registration("wrongtype2", R"({"name":"wrongtype2"})", now_ns()));
  EXPECT_EQ(redis_hget("weft:{agents}", "wrongtype2"), R"({"name":"wrongtype2"})");
  redis_run({"HDEL", "weft:{agents}", "wrongtype2"});
  redis_run({"HDEL", "weft:{agents}:registered", "wrongtype2"});
}

// Issue 15: what one controller stores reaches the others sharing the Redis through the replica
// feed (controller/redis_feed.hpp), in order, each window with its target; its own events are not
// given back to it. A store opened later starts at the feed's end (it restores from the store).
TEST(RedisStore, FeedReachesTheOtherReplicas) {
  if (redis_url().empty()) GTEST_SKIP() << "WEFT_TEST_REDIS not set (run through with_redis.sh)";
  auto s1 = open_store(redis_url()), s2 = open_store(redis_url());
  ASSERT_TRUE(s1 && s2);
  int64_t t = now_ns() - 30'000'000'000;
  std::vector<weft::proto::WindowStats> ws{window("feed2", t, 100, 3), window("feed3", t, 50, 0)};
  ASSERT_TRUE((*s1)->save_registration("feed1", R"({"name":"feed1"})", t));
  ASSERT_TRUE((*s1)->append("feed1", ws, t + 5));
  ASSERT_TRUE((*s1)->remove_registration("feed1"));
  std::vector<PeerEvent> got;
  auto collect = [&](const PeerEvent& ev) { got.push_back(ev); };
  ASSERT_EQ((*s1)->poll_peers(collect).value_or(99), 0u) << "a replica's own events came back to it";
  ASSERT_EQ((*s2)->poll_peers(collect).value_or(99), 3u);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].kind, PeerEvent::Kind::registration);
  EXPECT_EQ(got[0].registration, R"({"name":"feed1"})");
  EXPECT_EQ(got[0].received_ns, t);
  EXPECT_EQ(got[1].kind, PeerEvent::Kind::report);
  EXPECT_EQ(got[1].agent, "feed1");
  EXPECT_EQ(got[1].received_ns, t + 5);
  ASSERT_EQ(got[1].windows.size(), 2u);
  EXPECT_EQ(got[1].windows[0].target, "feed2");
  EXPECT_EQ(got[1].windows[0].lost, 3u);
  EXPECT_EQ(got[1].windows[1].target, "feed3");
  EXPECT_EQ(got[2].kind, PeerEvent::Kind::removal);
  EXPECT_EQ((*s2)->poll_peers(collect).value_or(99), 0u) << "an event was given twice";
  auto s3 = open_store(redis_url());
  ASSERT_TRUE(s3);
  EXPECT_EQ((*s3)->poll_peers(collect).value_or(99), 0u) << "a new replica replayed old events";
}
