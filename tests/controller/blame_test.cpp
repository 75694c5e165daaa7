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
