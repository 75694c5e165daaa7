// The Redis store against a real Redis Cluster (with_redis_cluster.sh starts 3 masters + 3
// replicas on loopback and sets WEFT_TEST_REDIS_CLUSTER). Without it these tests skip. The crash
// test leaves the cluster with one master fewer, so it comes last.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "controller/ingest.hpp"
#include "controller/redis_slots.hpp"
#include "lib/test_util.hpp"

using namespace weft::controller;
using namespace weft::testlib;
using weft::proto::Protocol;

namespace {

std::string cluster_url() {
  const char* u = std::getenv("WEFT_TEST_REDIS_CLUSTER");
  return u ? u : "";
}
std::vector<int> cluster_ports() {
  std::vector<int> out;
  const char* p = std::getenv("WEFT_TEST_REDIS_CLUSTER_PORTS");
  std::istringstream in(p ? p : "");
  for (int port; in >> port;) out.push_back(port);
  return out;
}

// One command on one node through a connection of our own; the reply (nullptr if the node is gone).
struct Node {
  redisContext* c = nullptr;
  explicit Node(int port) {
    c = redisConnect("127.0.0.1", port);
    if (c && c->err) {
      redisFree(c);
      c = nullptr;
    }
  }
  ~Node() {
    if (c) redisFree(c);
  }
  redisReply* cmd(const char* text) { return c ? static_cast<redisReply*>(redisCommand(c, text)) : nullptr; }
};

// The port of the master serving `key`'s slot, asked of any live node.
int master_port_for(const std::string& key) {
  int slot = weft::controller::redis::key_slot(key);
  for (int port : cluster_ports()) {
    Node n(port);
    redisReply* r = n.cmd("CLUSTER SLOTS");
    if (!r) continue;
    auto ranges = weft::controller::redis::parse_cluster_slots(*r);
    freeReplyObject(r);
    if (!ranges) continue;
    for (const auto& range : *ranges)
      if (slot >= range.first && slot <= range.last)
        return std::stoi(range.master.substr(range.master.rfind(':') + 1));
  }
  return -1;
}

std::string agent(int i) { return "ca" + std::to_string(i); }

}  // namespace

// Two controllers on one cluster: what one wrote, the other reads (history, restore, registrations),
// and the agents' keys are spread over all three masters.
TEST(RedisCluster, ReplicasShareOneStoreAcrossShards) {
  if (cluster_url().empty())
    GTEST_SKIP() << "WEFT_TEST_REDIS_CLUSTER not set (run through with_redis_cluster.sh)";
  auto a = open_store(cluster_url());
  ASSERT_TRUE(a) << a.error().message;
  auto b = open_store(cluster_url());
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ((*a)->info().kind, "redis-cluster");
  int64_t t = now_ns() - 60'000'000'000;
  constexpr int kAgents = 24;
  for (int i = 0; i < kAgents; ++i) {
    std::vector<weft::proto::WindowStats> ws;
    for (int k = 0; k < 3; ++k)
      ws.push_back(window("peer", t + k * 1'000'000'000LL, 100, static_cast<uint64_t>(i + k)));
    ws.push_back(window("peer", t, 50, 1, Protocol::tcp));
    ASSERT_TRUE((*a)->append(agent(i), ws, now_ns()));
    ASSERT_TRUE((*a)->save_registration(agent(i), "{\"name\":\"" + agent(i) + "\"}", now_ns()));
  }
  for (int i = 0; i < kAgents; ++i) {
    auto h = (*b)->history(Protocol::udp, agent(i), "peer", 0, INT64_MAX, 100);
    ASSERT_TRUE(h) << h.error().message;
    ASSERT_EQ(h->size(), 3u) << agent(i);
    EXPECT_EQ((*h)[2].lost, static_cast<uint64_t>(i + 2));
    EXPECT_EQ((*b)->history(Protocol::tcp, agent(i), "peer", 0, INT64_MAX, 100)->size(), 1u);
  }
  std::map<std::string, size_t> restored;
  ASSERT_TRUE(
      (*b)->load_recent(t - 1, [&](const std::string& src, auto ws, int64_t) { restored[src] = ws.size(); }));
  for (int i = 0; i < kAgents; ++i) EXPECT_EQ(restored[agent(i)], 4u) << agent(i);
  std::set<std::string> regs;
  ASSERT_TRUE((*b)->load_registrations([&](std::string_view r, int64_t) { regs.insert(std::string(r)); }));
  EXPECT_EQ(regs.size(), static_cast<size_t>(kAgents));
  // A resend through the other controller adds nothing.
  auto again = window("peer", t, 100, 0);
  ASSERT_TRUE((*b)->append(agent(0), std::span(&again, 1), now_ns()));
  EXPECT_EQ((*a)->history(Protocol::udp, agent(0), "peer", 0, INT64_MAX, 100)->size(), 3u);
  // Spread: every master holds some of the agents' keys.
  std::set<int> masters;
  for (int i = 0; i < kAgents; ++i) masters.insert(master_port_for("weft:{" + agent(i) + "}"));
  EXPECT_EQ(masters.size(), 3u);
  for (int port : masters) {
    Node n(port);
    redisReply* r = n.cmd("DBSIZE");
    ASSERT_NE(r, nullptr);
    EXPECT_GT(r->integer, 0) << "master on port " << port;
    freeReplyObject(r);
  }
  ASSERT_TRUE((*a)->apply_retention(t + 1'500'000'000));
  EXPECT_EQ((*b)->history(Protocol::udp, agent(5), "peer", 0, INT64_MAX, 100)->size(), 1u);
}

// Ingest keeps going while a master crashes: every report is retried until the store takes it (as
// an agent does), and afterwards every pair has each window exactly once.
TEST(RedisCluster, MasterCrashDuringIngestLosesAndDoublesNothing) {
  if (cluster_url().empty())
    GTEST_SKIP() << "WEFT_TEST_REDIS_CLUSTER not set (run through with_redis_cluster.sh)";
  auto s = open_store(cluster_url());
  ASSERT_TRUE(s) << s.error().message;
  constexpr int kAgents = 12, kRounds = 30, kCrashAt = 8;
  const std::string victim_key = "weft:{cf0}";
  int victim = master_port_for(victim_key);
  ASSERT_GT(victim, 0);
  int64_t t = now_ns() - 600'000'000'000;
  int failed_appends = 0;
  auto worst = std::chrono::steady_clock::duration::zero();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int round = 0; round < kRounds; ++round) {
    if (round == kCrashAt) {
      Node n(victim);
      redisReply* r = n.cmd("DEBUG SEGFAULT");  // no reply: the server dies
      if (r) freeReplyObject(r);
    }
    for (int i = 0; i < kAgents; ++i) {
      std::string src = "cf" + std::to_string(i);
      std::vector<weft::proto::WindowStats> ws{window("peer", t + round * 1'000'000'000LL, 100, 1),
                                               window("peer2", t + round * 1'000'000'000LL, 100, 2)};
      auto begin = std::chrono::steady_clock::now();
      while (true) {  // the agent's retry, bounded
        auto st = (*s)->append(src, ws, now_ns());
        if (st) break;
        ++failed_appends;
        ASSERT_LT(std::chrono::steady_clock::now(), deadline)
            << "store never took it back: " << st.error().message;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      worst = std::max(worst, std::chrono::steady_clock::now() - begin);
    }
  }
  // The crashed master's slots are served by its former replica now.
  int now_master = master_port_for(victim_key);
  EXPECT_GT(now_master, 0);
  EXPECT_NE(now_master, victim);
  std::cout << "failover: longest append "
            << std::chrono::duration_cast<std::chrono::milliseconds>(worst).count() << " ms, "
            << failed_appends << " appends answered as failed and retried\n";
  // A second controller reads every window exactly once.
  auto fresh = open_store(cluster_url());
  ASSERT_TRUE(fresh) << fresh.error().message;
  for (int i = 0; i < kAgents; ++i)
    for (const char* dst : {"peer", "peer2"}) {
      std::string src = "cf" + std::to_string(i);
      auto h = (*fresh)->history(Protocol::udp, src, dst, 0, INT64_MAX, 1000);
      ASSERT_TRUE(h) << h.error().message;
      ASSERT_EQ(h->size(), static_cast<size_t>(kRounds)) << src << "->" << dst;
      for (int round = 0; round < kRounds; ++round)
        EXPECT_EQ((*h)[round].start_unix_ns, t + round * 1'000'000'000LL) << src << "->" << dst;
    }
}
