// Blame: which host or link a red mesh points at.
#include "controller/blame.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace weft;
using namespace weft::controller;

namespace {

constexpr int64_t kWindow = 10'000'000'000;
constexpr int64_t kNow = 1'800'000'000'000'000'000;

PairWindow pair(const std::string& s, const std::string& d, uint64_t lost,
                int64_t end = kNow - 1'000'000'000) {
  PairWindow p;
  p.src = s;
  p.dst = d;
  p.window.sent = 100;
  p.window.lost = lost;
  p.window.received = 100 - lost;
  p.window.end_unix_ns = end;
  p.window.start_unix_ns = end - kWindow;
  return p;
}

// A full mesh of `n` hosts h1..hn; loss(src, dst) gives each pair's lost probes out of 100.
template <typename Loss>
std::vector<PairWindow> mesh(int n, Loss loss) {
  std::vector<PairWindow> v;
  for (int i = 1; i <= n; ++i)
    for (int j = 1; j <= n; ++j)
      if (i != j) {
        const std::string s = "h" + std::to_string(i), d = "h" + std::to_string(j);
        v.push_back(pair(s, d, loss(s, d)));
      }
  return v;
}

}  // namespace

TEST(Blame, ACleanMeshBlamesNothing) {
  auto b = find_blame(mesh(5, [](auto&, auto&) { return 0; }), {}, kNow, kWindow);
  EXPECT_EQ(b.measured_pairs, 20u);
  EXPECT_EQ(b.bad_pairs, 0u);
  EXPECT_TRUE(b.hosts.empty());
  EXPECT_TRUE(b.links.empty());
}

TEST(Blame, OneLossyLinkIsThatLinkInItsDirection) {
  auto b = find_blame(mesh(4, [](auto& s, auto& d) { return s == "h1" && d == "h2" ? 30 : 0; }), {}, kNow,
                      kWindow);
  EXPECT_TRUE(b.hosts.empty());
  ASSERT_EQ(b.links.size(), 1u);
  EXPECT_EQ(b.links[0].src, "h1");
  EXPECT_EQ(b.links[0].dst, "h2");
  EXPECT_DOUBLE_EQ(b.links[0].loss_ratio, 0.3);
}

TEST(Blame, AHostLossyBothWaysIsTheHostNotSixLinks) {
  auto b = find_blame(mesh(4, [](auto& s, auto& d) { return s == "h3" || d == "h3" ? 20 : 0; }), {}, kNow,
                      kWindow);
  ASSERT_EQ(b.hosts.size(), 1u);
  EXPECT_EQ(b.hosts[0].host, "h3");
  EXPECT_EQ(b.hosts[0].direction, "both");
  EXPECT_EQ(b.hosts[0].bad_pairs, 6u);
  EXPECT_DOUBLE_EQ(b.hosts[0].loss_ratio, 0.2);
  EXPECT_TRUE(b.links.empty());
  EXPECT_EQ(b.bad_pairs, 6u);
}

TEST(Blame, AHostThatOnlyReceivesBadlyIsBlamedForItsInboundSide) {
  auto b = find_blame(mesh(5, [](auto&, auto& d) { return d == "h2" ? 50 : 0; }), {}, kNow, kWindow);
  ASSERT_EQ(b.hosts.size(), 1u);
  EXPECT_EQ(b.hosts[0].host, "h2");
  EXPECT_EQ(b.hosts[0].direction, "in");
  EXPECT_EQ(b.hosts[0].bad_pairs, 4u);
  EXPECT_TRUE(b.links.empty());
}

TEST(Blame, TwoBadHostsDoNotDragTheirHealthyPeersIn) {
  // In a mesh of four, h3 and h4 bad: h1 and h2 each see half their pairs bad.
  auto b = find_blame(
      mesh(4, [](auto& s, auto& d) { return s == "h3" || d == "h3" || s == "h4" || d == "h4" ? 40 : 0; }), {},
      kNow, kWindow);
  ASSERT_EQ(b.hosts.size(), 2u);
  EXPECT_EQ(b.hosts[0].host, "h3");
  EXPECT_EQ(b.hosts[1].host, "h4");
  EXPECT_TRUE(b.links.empty());
}

// The threshold: a host is blamed when at least half (and two) of its pairs in one direction are
// bad. In a mesh of five, h1 sends to four peers: two bad is the host (outbound), one is a link.
TEST(Blame, HalfAHostsPairsInOneDirectionIsTheHostOneIsALink) {
  auto two =
      find_blame(mesh(5, [](auto& s, auto& d) { return s == "h1" && (d == "h2" || d == "h3") ? 100 : 0; }),
                 {}, kNow, kWindow);
  ASSERT_EQ(two.hosts.size(), 1u);
  EXPECT_EQ(two.hosts[0].host, "h1");
  EXPECT_EQ(two.hosts[0].direction, "out");
  EXPECT_EQ(two.hosts[0].bad_pairs, 2u);
  EXPECT_TRUE(two.links.empty());
  auto one = find_blame(mesh(5, [](auto& s, auto& d) { return s == "h1" && d == "h2" ? 100 : 0; }), {}, kNow,
                        kWindow);
  EXPECT_TRUE(one.hosts.empty());
  ASSERT_EQ(one.links.size(), 1u);
  EXPECT_EQ(one.links[0].src, "h1");
  EXPECT_DOUBLE_EQ(one.links[0].loss_ratio, 1.0);
}

TEST(Blame, TooFewPeersToTellAHostFromItsLinks) {
  // Three hosts: h3 has two peers, below min_peers (3): its four bad pairs are named as links.
  auto b = find_blame(mesh(3, [](auto& s, auto& d) { return s == "h3" || d == "h3" ? 20 : 0; }), {}, kNow,
                      kWindow);
  EXPECT_TRUE(b.hosts.empty());
  EXPECT_EQ(b.links.size(), 4u);
}

TEST(Blame, BelowTheThresholdIsNotBad) {
  auto v = mesh(4, [](auto& s, auto& d) { return s == "h1" && d == "h2" ? 4 : 0; });
  EXPECT_EQ(find_blame(v, {}, kNow, kWindow).bad_pairs, 0u);
  BlameOptions strict;
  strict.loss_threshold = 0.01;
  EXPECT_EQ(find_blame(v, {}, kNow, kWindow, strict).links.size(), 1u);
}

TEST(Blame, StaleWindowsAndDownAgentsAreLeftOut) {
  auto v = mesh(4, [](auto& s, auto&) { return s == "h4" ? 100 : 0; });
  for (auto& p : v)
    if (p.src == "h1" && p.dst == "h2") {
      p.window.lost = 100;
      p.window.end_unix_ns = kNow - 5 * kWindow;  // long gone: says nothing about now
    }
  auto b = find_blame(v, {"h4"}, kNow, kWindow);
  EXPECT_EQ(b.measured_pairs, 5u);  // 12 pairs, minus h4's 6, minus the stale one
  EXPECT_EQ(b.bad_pairs, 0u);
  EXPECT_TRUE(b.hosts.empty());
  EXPECT_TRUE(b.links.empty());
}

TEST(Blame, EmptyWindowsCarryNoVerdict) {
  auto v = mesh(4, [](auto&, auto&) { return 0; });
  for (auto& p : v) p.window.sent = p.window.lost = p.window.received = 0;
  auto b = find_blame(v, {}, kNow, kWindow);
  EXPECT_EQ(b.measured_pairs, 0u);
  EXPECT_TRUE(b.hosts.empty() && b.links.empty());
}

namespace {
// Every pair answered, 40 us median network RTT, usual RTT 40 us; `slow` pairs take `rtt_ns`.
template <typename Slow>
std::vector<PairWindow> timed_mesh(int n, Slow slow, int64_t rtt_ns, int64_t baseline_ns = 40'000) {
  auto v = mesh(n, [](auto&, auto&) { return 0; });
  for (auto& p : v) {
    p.window.network_rtt.count = 100;
    p.window.network_rtt.p50_ns = slow(p.src, p.dst) ? rtt_ns : 40'000;
    p.baseline_rtt_ns = baseline_ns;
  }
  return v;
}
}  // namespace

// Issue 14: blame looked only at loss, so a link 2 ms slower than usual never showed as suspect.
TEST(Blame, ALinkThatGotSlowerIsALatencySuspect) {
  auto v = timed_mesh(
      5, [](auto& s, auto& d) { return s == "h1" && d == "h2"; }, 2'040'000);
  auto b = find_blame(v, {}, kNow, kWindow);
  EXPECT_TRUE(b.hosts.empty());
  ASSERT_EQ(b.links.size(), 1u);
  EXPECT_EQ(b.links[0].src, "h1");
  EXPECT_EQ(b.links[0].dst, "h2");
  EXPECT_EQ(b.links[0].reason, "latency");
  EXPECT_EQ(b.links[0].rtt_ns, 2'040'000);
  EXPECT_EQ(b.links[0].expected_ns, 40'000);
  EXPECT_EQ(b.slow_pairs, 1u);
  EXPECT_EQ(b.bad_pairs, 1u);
}

// A pair slow from the start (its own baseline is just as slow) still stands out from its group.
TEST(Blame, ALinkSlowFromTheStartStandsOutFromItsGroup) {
  auto v = timed_mesh(
      5, [](auto& s, auto& d) { return s == "h3" && d == "h4"; }, 3'000'000);
  for (auto& p : v)
    if (p.src == "h3" && p.dst == "h4") p.baseline_rtt_ns = 3'000'000;
  auto b = find_blame(v, {}, kNow, kWindow);
  ASSERT_EQ(b.links.size(), 1u);
  EXPECT_EQ(b.links[0].reason, "latency");
  EXPECT_EQ(b.links[0].expected_ns, 40'000);  // the group's median
}

// Jitter is not a verdict: twice as slow but within the margin, or +300 us on a 1 ms pair.
TEST(Blame, SmallLatencyChangesAreNotBad) {
  EXPECT_EQ(find_blame(timed_mesh(
                           5, [](auto& s, auto&) { return s == "h1"; }, 90'000),
                       {}, kNow, kWindow)
                .bad_pairs,
            0u);
  // A mesh whose pairs all take about 1 ms: +300 us on h1's is under twice its usual.
  auto v = timed_mesh(
      5, [](auto& s, auto&) { return s == "h1"; }, 1'300'000, 1'000'000);
  for (auto& p : v)
    if (p.src != "h1") p.window.network_rtt.p50_ns = 1'000'000;
  EXPECT_EQ(find_blame(v, {}, kNow, kWindow).bad_pairs, 0u);
}

// A host slow in every direction is the host, with the reason; loss and latency add up.
TEST(Blame, ASlowHostIsTheHostAndSaysWhy) {
  auto v = timed_mesh(
      5, [](auto& s, auto& d) { return s == "h5" || d == "h5"; }, 5'000'000);
  auto b = find_blame(v, {}, kNow, kWindow);
  ASSERT_EQ(b.hosts.size(), 1u);
  EXPECT_EQ(b.hosts[0].host, "h5");
  EXPECT_EQ(b.hosts[0].direction, "both");
  EXPECT_EQ(b.hosts[0].reason, "latency");
  EXPECT_TRUE(b.links.empty());
  for (auto& p : v)
    if (p.dst == "h5") p.window.lost = 30, p.window.received = 70;
  b = find_blame(v, {}, kNow, kWindow);
  ASSERT_EQ(b.hosts.size(), 1u);
  EXPECT_EQ(b.hosts[0].reason, "loss+latency");
}

// Issue 14: an agent that came back was blamed again for a window or two: its peers' windows
// toward it covered its downtime. Windows that began before it came back are left out.
TEST(Blame, AReturnedAgentIsNotBlamedForItsOutage) {
  auto v = mesh(5, [](auto& s, auto& d) { return s == "h2" || d == "h2" ? 100 : 0; });
  BlameContext ctx;
  ctx.up_again_unix_ns["h2"] = kNow - 2'000'000'000;  // after these windows began
  auto b = find_blame(v, {}, kNow, kWindow, {}, ctx);
  EXPECT_TRUE(b.hosts.empty());
  EXPECT_TRUE(b.links.empty());
  EXPECT_EQ(b.measured_pairs, 12u);  // 20 pairs, 8 of them with h2 left out
  // Windows that began after it came back count again.
  ctx.up_again_unix_ns["h2"] = kNow - 20'000'000'000;
  b = find_blame(v, {}, kNow, kWindow, {}, ctx);
  ASSERT_EQ(b.hosts.size(), 1u);
  EXPECT_EQ(b.hosts[0].host, "h2");
}

TEST(Blame, GroupsAreComparedApart) {
  // Four hosts 40 us apart in group "a", and b1 in another place: the pairs between them are in
  // group "wan" and all take 5 ms (their normal: no verdict).
  std::vector<GroupInfo> groups{{"a", {proto::Protocol::udp}, {"a*"}},
                                {"b", {proto::Protocol::udp}, {"b*"}},
                                {"wan", {proto::Protocol::udp}, {"*"}}};
  std::vector<PairWindow> v;
  const std::vector<std::string> hosts{"a1", "a2", "a3", "a4", "b1"};
  for (const auto& s : hosts)
    for (const auto& d : hosts) {
      if (s == d) continue;
      PairWindow p = pair(s, d, 0);
      p.window.network_rtt.count = 100;
      p.window.network_rtt.p50_ns = s[0] == d[0] ? 40'000 : 5'000'000;
      p.baseline_rtt_ns = p.window.network_rtt.p50_ns;
      v.push_back(p);
    }
  auto ctx = blame_context(proto::Protocol::udp, {}, groups);
  EXPECT_EQ(ctx.group_of(v[0]), "a");
  EXPECT_EQ(find_blame(v, {}, kNow, kWindow, {}, ctx).bad_pairs, 0u);
  // Without groups all pairs are one mesh and the 8 pairs to and from b1 would look slow.
  EXPECT_EQ(find_blame(v, {}, kNow, kWindow).bad_pairs, 8u);
}
