#include "controller/metrics_renderer.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include "controller/metrics_text.hpp"
#include "fake_mesh_view.hpp"

namespace weft::controller {
namespace {

using proto::Protocol;
using testing::agent;
using testing::FakeMeshView;
using testing::pair;

constexpr int64_t kNow = 1'800'000'000'000'000'000;
constexpr int64_t kUs = 1000;

// Reads an exposition back and checks its structure as Prometheus would: every sample belongs to
// the family whose HELP/TYPE came just before it, families appear once, series are unique.
struct Parsed {
  std::map<std::string, double> samples;     // "name{labels}" -> value
  std::map<std::string, std::string> types;  // family -> gauge/counter
};

Parsed parse(const std::string& text) {
  Parsed p;
  std::istringstream in(text);
  std::string line, family;
  std::set<std::string> seen_families;
  while (std::getline(in, line)) {
    if (line.starts_with("# HELP ")) {
      family = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_TRUE(seen_families.insert(family).second) << "family twice: " << family;
      EXPECT_TRUE(valid_metric_name(family)) << family;
      continue;
    }
    if (line.starts_with("# TYPE ")) {
      std::istringstream l(line.substr(7));
      std::string name, type;
      l >> name >> type;
      EXPECT_EQ(name, family);
      p.types[name] = type;
      continue;
    }
    const auto sp = line.rfind(' ');
    const std::string series = line.substr(0, sp);
    const std::string name = series.substr(0, series.find('{'));
    EXPECT_EQ(name, family) << "sample outside its family: " << line;
    EXPECT_TRUE(p.samples.emplace(series, std::stod(line.substr(sp + 1))).second)
        << "duplicate series " << series;
  }
  return p;
}

FakeMeshView sample_view() {
  FakeMeshView v;
  v.agent_list = {agent("a", AgentState::up, {Protocol::udp, Protocol::tcp}),
                  agent("b", AgentState::up, {Protocol::udp, Protocol::tcp}),
                  agent("c", AgentState::down, {Protocol::udp})};
  v.agent_list[0].health = {2.5, 20480, 300, 1, 4, 2};
  v.agent_list[0].last_seen_unix_ns = kNow - 3'000'000'000;
  v.agent_list[2].alarms = {{"agent_down", "no report for 60 s", kNow}};
  const int64_t fresh = kNow - 5'000'000'000, old = kNow - 40'000'000'000;
  v.pairs = {
      pair(Protocol::udp, "a", "b", fresh, 100, 30, 100 * kUs, 300 * kUs),
      pair(Protocol::udp, "a", "c", old, 100, 0, 50 * kUs, 60 * kUs),  // stale: left out
      pair(Protocol::udp, "b", "a", fresh, 100, 0, 200 * kUs, 400 * kUs),
      pair(Protocol::udp, "b", "c", fresh, 50, 50, 0, 0),  // every probe lost
      pair(Protocol::tcp, "a", "b", fresh, 10, 0, 70 * kUs, 90 * kUs),
  };
  v.counters = {.requests = 40,
                .requests_rejected = 3,
                .windows_accepted = 200,
                .windows_duplicate = 7,
                .windows_stale = 1,
                .store_errors = 2,
                .bytes = 123456};
  return v;
}

std::string S(const char* s) { return s; }

TEST(MetricsRenderer, HostAggregatesFromCurrentWindowsOnly) {
  const auto v = sample_view();
  const auto p = parse(render_metrics(v, {}, kNow));
  const auto& m = p.samples;
  // a as prober: only a->b is current (a->c is 40 s old with 10 s windows).
  EXPECT_DOUBLE_EQ(m.at(S("weft_host_loss_ratio{host=\"a\",protocol=\"udp\",direction=\"src\"}")), 0.3);
  EXPECT_DOUBLE_EQ(m.at(S("weft_host_peers{host=\"a\",protocol=\"udp\",direction=\"src\"}")), 1);
  EXPECT_DOUBLE_EQ(
      m.at(S("weft_host_peer_rtt_median_seconds{host=\"a\",protocol=\"udp\",direction=\"src\"}")), 100e-6);
  EXPECT_DOUBLE_EQ(m.at(S("weft_host_peer_rtt_worst_seconds{host=\"a\",protocol=\"udp\",direction=\"src\"}")),
                   300e-6);
  // b as prober: b->a fine, b->c all lost.
  EXPECT_DOUBLE_EQ(m.at(S("weft_host_peers{host=\"b\",protocol=\"udp\",direction=\"src\"}")), 2);
  EXPECT_DOUBLE_EQ(m.at(S("weft_host_peers_unreachable{host=\"b\",protocol=\"udp\",direction=\"src\"}")), 1);
  EXPECT_DOUBLE_EQ(m.at(S("weft_host_loss_ratio{host=\"b\",protocol=\"udp\",direction=\"src\"}")),
                   50.0 / 150.0);
  // The all-lost pair has no RTT samples, so b's median is b->a's alone.
  EXPECT_DOUBLE_EQ(
      m.at(S("weft_host_peer_rtt_median_seconds{host=\"b\",protocol=\"udp\",direction=\"src\"}")), 200e-6);
  // As target: a is probed by b only; c by b (all lost).
  EXPECT_DOUBLE_EQ(
      m.at(S("weft_host_peer_rtt_median_seconds{host=\"a\",protocol=\"udp\",direction=\"dst\"}")), 200e-6);
  EXPECT_DOUBLE_EQ(m.at(S("weft_host_peers_unreachable{host=\"c\",protocol=\"udp\",direction=\"dst\"}")), 1);
  EXPECT_DOUBLE_EQ(m.at(S("weft_host_loss_ratio{host=\"c\",protocol=\"udp\",direction=\"dst\"}")), 1.0);
  // c probes nothing current: 0 peers, and no made-up ratio or RTT.
  EXPECT_DOUBLE_EQ(m.at(S("weft_host_peers{host=\"c\",protocol=\"udp\",direction=\"src\"}")), 0);
  EXPECT_FALSE(m.contains(S("weft_host_loss_ratio{host=\"c\",protocol=\"udp\",direction=\"src\"}")));
  EXPECT_FALSE(
      m.contains(S("weft_host_peer_rtt_worst_seconds{host=\"c\",protocol=\"udp\",direction=\"src\"}")));
  // Protocols are kept apart; c does not speak TCP so has no TCP series.
  EXPECT_DOUBLE_EQ(
      m.at(S("weft_host_peer_rtt_median_seconds{host=\"a\",protocol=\"tcp\",direction=\"src\"}")), 70e-6);
  EXPECT_FALSE(m.contains(S("weft_host_peers{host=\"c\",protocol=\"tcp\",direction=\"src\"}")));
  // No RDMA data, no RDMA-speaking agent: no RDMA series at all.
  for (const auto& [k, _] : m) EXPECT_EQ(k.find("rdma"), std::string::npos) << k;
}

TEST(MetricsRenderer, SuspectsAsGauges) {
  // a->b loses 30%: with only two live hosts that is a link, not a host; b->c is all lost but c is
  // down, so it is no one's verdict.
  const auto p = parse(render_metrics(sample_view(), {}, kNow));
  const auto& m = p.samples;
  EXPECT_DOUBLE_EQ(m.at(S("weft_suspect_links{protocol=\"udp\"}")), 1);
  EXPECT_DOUBLE_EQ(m.at(S("weft_suspect_hosts{protocol=\"udp\"}")), 0);
  EXPECT_DOUBLE_EQ(m.at(S("weft_suspect_link_loss_ratio{protocol=\"udp\",src=\"a\",dst=\"b\"}")), 0.3);
  EXPECT_FALSE(m.contains(S("weft_suspect_link_loss_ratio{protocol=\"udp\",src=\"b\",dst=\"c\"}")));
  EXPECT_DOUBLE_EQ(m.at(S("weft_suspect_links{protocol=\"tcp\"}")), 0);
  EXPECT_EQ(p.types.at("weft_suspect_host_bad_pairs"), "gauge");
}

// RDMA windows (what agents with --rdma report) get the same host and pair series, labelled
// protocol="rdma" and kept apart from UDP's.
TEST(MetricsRenderer, RdmaPairsHaveTheirOwnSeries) {
  FakeMeshView v;
  v.agent_list = {agent("a", AgentState::up, {Protocol::udp, Protocol::rdma}),
                  agent("b", AgentState::up, {Protocol::udp, Protocol::rdma})};
  const int64_t t = kNow - 1'000'000'000;
  v.pairs = {pair(Protocol::rdma, "a", "b", t, 100, 0, 8 * kUs, 20 * kUs),
             pair(Protocol::rdma, "b", "a", t, 100, 100, 0, 0),  // a's engine is gone
             pair(Protocol::udp, "a", "b", t, 100, 0, 50 * kUs, 90 * kUs)};
  const auto m = parse(render_metrics(v, {.per_pair = true}, kNow)).samples;
  EXPECT_DOUBLE_EQ(
      m.at(S("weft_host_peer_rtt_median_seconds{host=\"a\",protocol=\"rdma\",direction=\"src\"}")), 8e-6);
  EXPECT_DOUBLE_EQ(
      m.at(S("weft_host_peer_rtt_median_seconds{host=\"a\",protocol=\"udp\",direction=\"src\"}")), 50e-6);
  EXPECT_DOUBLE_EQ(m.at(S("weft_host_peers_unreachable{host=\"a\",protocol=\"rdma\",direction=\"dst\"}")), 1);
  EXPECT_DOUBLE_EQ(m.at(S("weft_host_loss_ratio{host=\"b\",protocol=\"rdma\",direction=\"src\"}")), 1.0);
  EXPECT_DOUBLE_EQ(
      m.at(S("weft_pair_network_rtt_seconds{protocol=\"rdma\",src=\"a\",dst=\"b\",stat=\"p99\"}")), 20e-6);
  EXPECT_DOUBLE_EQ(m.at(S("weft_pair_loss_ratio{protocol=\"rdma\",src=\"b\",dst=\"a\"}")), 1.0);
}

TEST(MetricsRenderer, MedianOfEvenCountIsMeanOfMiddlePair) {
  FakeMeshView v;
  const int64_t t = kNow - 1'000'000'000;
  v.pairs = {pair(Protocol::udp, "a", "b", t, 10, 0, 10 * kUs, 10 * kUs),
             pair(Protocol::udp, "a", "c", t, 10, 0, 30 * kUs, 30 * kUs),
             pair(Protocol::udp, "a", "d", t, 10, 0, 50 * kUs, 50 * kUs),
             pair(Protocol::udp, "a", "e", t, 10, 0, 1000 * kUs, 1000 * kUs)};
  const auto m = parse(render_metrics(v, {}, kNow)).samples;
  EXPECT_DOUBLE_EQ(
      m.at(S("weft_host_peer_rtt_median_seconds{host=\"a\",protocol=\"udp\",direction=\"src\"}")), 40e-6);
  EXPECT_DOUBLE_EQ(m.at(S("weft_host_peer_rtt_worst_seconds{host=\"a\",protocol=\"udp\",direction=\"src\"}")),
                   1000e-6);
}

TEST(MetricsRenderer, ControllerAndAgentHealth) {
  const auto v = sample_view();
  const auto p = parse(render_metrics(v, {}, kNow));
  const auto& m = p.samples;
  EXPECT_DOUBLE_EQ(m.at(S("weft_controller_agents{state=\"up\"}")), 2);
  EXPECT_DOUBLE_EQ(m.at(S("weft_controller_agents{state=\"down\"}")), 1);
  EXPECT_DOUBLE_EQ(m.at(S("weft_controller_ingest_requests_total")), 40);
  EXPECT_DOUBLE_EQ(m.at(S("weft_controller_ingest_rejected_requests_total")), 3);
  EXPECT_DOUBLE_EQ(m.at(S("weft_controller_ingest_store_errors_total")), 2);
  EXPECT_DOUBLE_EQ(m.at(S("weft_controller_ingest_windows_total{result=\"accepted\"}")), 200);
  EXPECT_DOUBLE_EQ(m.at(S("weft_controller_ingest_windows_total{result=\"duplicate\"}")), 7);
  EXPECT_DOUBLE_EQ(m.at(S("weft_controller_ingest_received_bytes_total")), 123456);
  EXPECT_DOUBLE_EQ(m.at(S("weft_controller_store_pairs{protocol=\"udp\",freshness=\"current\"}")), 3);
  EXPECT_DOUBLE_EQ(m.at(S("weft_controller_store_pairs{protocol=\"udp\",freshness=\"stale\"}")), 1);
  EXPECT_DOUBLE_EQ(m.at(S("weft_controller_store_up{kind=\"sqlite\"}")), 1);
  EXPECT_DOUBLE_EQ(m.at(S("weft_controller_window_seconds")), 10);
  EXPECT_DOUBLE_EQ(m.at(S("weft_agent_up{host=\"a\"}")), 1);
  EXPECT_DOUBLE_EQ(m.at(S("weft_agent_up{host=\"c\"}")), 0);
  EXPECT_DOUBLE_EQ(m.at(S("weft_agent_info{host=\"a\",version=\"0.1.0\"}")), 1);
  EXPECT_DOUBLE_EQ(m.at(S("weft_agent_cpu_ratio{host=\"a\"}")), 0.025);
  EXPECT_DOUBLE_EQ(m.at(S("weft_agent_resident_memory_bytes{host=\"a\"}")), 20480.0 * 1024);
  EXPECT_DOUBLE_EQ(m.at(S("weft_agent_probes_per_second{host=\"a\"}")), 300);
  EXPECT_DOUBLE_EQ(m.at(S("weft_agent_dropped_windows_total{host=\"a\"}")), 1);
  EXPECT_DOUBLE_EQ(m.at(S("weft_agent_spooled_windows{host=\"a\"}")), 4);
  EXPECT_DOUBLE_EQ(m.at(S("weft_agent_prober_restarts_total{host=\"a\"}")), 2);
  EXPECT_DOUBLE_EQ(m.at(S("weft_agent_last_seen_timestamp_seconds{host=\"a\"}")),
                   (kNow - 3'000'000'000) / 1e9);
  EXPECT_DOUBLE_EQ(m.at(S("weft_agent_alarms{host=\"c\"}")), 1);
}

TEST(MetricsRenderer, NamesFollowConventions) {
  auto v = sample_view();
  const auto p = parse(render_metrics(v, {.per_pair = true}, kNow));
  for (const auto& [name, type] : p.types) {
    EXPECT_TRUE(name.starts_with("weft_")) << name;
    EXPECT_EQ(type == "counter", name.ends_with("_total")) << name << " is a " << type;
    // Base units only: seconds and bytes, never milli/micro or kilo.
    for (const char* bad : {"_ms", "_us", "_milliseconds", "_microseconds", "_kb", "_percent"})
      EXPECT_EQ(name.find(bad), std::string::npos) << name;
  }
}

TEST(MetricsRenderer, PerPairSeriesAreOptInAndCapped) {
  auto v = sample_view();
  auto off = parse(render_metrics(v, {}, kNow));
  for (const auto& [k, _] : off.samples) EXPECT_FALSE(k.starts_with("weft_pair_")) << k;
  EXPECT_DOUBLE_EQ(off.samples.at("weft_controller_metrics_pairs_omitted"), 0);

  // 4 current pairs (udp a->b, b->a, b->c; tcp a->b); the stale udp a->c is never exported.
  auto all = parse(render_metrics(v, {.per_pair = true}, kNow)).samples;
  EXPECT_DOUBLE_EQ(
      all.at(S("weft_pair_network_rtt_seconds{protocol=\"udp\",src=\"a\",dst=\"b\",stat=\"p99\"}")), 300e-6);
  EXPECT_DOUBLE_EQ(
      all.at(S("weft_pair_network_rtt_seconds{protocol=\"udp\",src=\"a\",dst=\"b\",stat=\"p50\"}")), 100e-6);
  EXPECT_DOUBLE_EQ(all.at(S("weft_pair_loss_ratio{protocol=\"udp\",src=\"a\",dst=\"b\"}")), 0.3);
  EXPECT_DOUBLE_EQ(all.at(S("weft_pair_loss_ratio{protocol=\"udp\",src=\"b\",dst=\"c\"}")), 1.0);
  EXPECT_FALSE(
      all.contains(S("weft_pair_network_rtt_seconds{protocol=\"udp\",src=\"b\",dst=\"c\",stat=\"p50\"}")));
  EXPECT_FALSE(all.contains(S("weft_pair_loss_ratio{protocol=\"udp\",src=\"a\",dst=\"c\"}")));
  EXPECT_DOUBLE_EQ(all.at(S("weft_pair_loss_ratio{protocol=\"tcp\",src=\"a\",dst=\"b\"}")), 0);
  EXPECT_DOUBLE_EQ(all.at("weft_controller_metrics_pairs_omitted"), 0);

  // A cap of 2 pairs' worth of series keeps the first two in (protocol, src, dst) order.
  auto capped =
      parse(render_metrics(v, {.per_pair = true, .max_pair_series = 2 * kSeriesPerPair}, kNow)).samples;
  size_t pair_series = 0;
  std::set<std::string> exported;
  for (const auto& [k, _] : capped) {
    if (!k.starts_with("weft_pair_")) continue;
    pair_series++;
    if (k.starts_with("weft_pair_loss_ratio")) exported.insert(k);
  }
  EXPECT_LE(pair_series, 2 * kSeriesPerPair);
  EXPECT_EQ(exported, (std::set<std::string>{"weft_pair_loss_ratio{protocol=\"udp\",src=\"a\",dst=\"b\"}",
                                             "weft_pair_loss_ratio{protocol=\"udp\",src=\"b\",dst=\"a\"}"}));
  EXPECT_DOUBLE_EQ(capped.at("weft_controller_metrics_pairs_omitted"), 2);
}

TEST(MetricsRenderer, EmptyControllerStillValid) {
  FakeMeshView v;
  const auto p = parse(render_metrics(v, {.per_pair = true}, kNow));
  EXPECT_DOUBLE_EQ(p.samples.at(S("weft_controller_agents{state=\"up\"}")), 0);
  EXPECT_DOUBLE_EQ(p.samples.at("weft_controller_metrics_pairs_omitted"), 0);
}

}  // namespace
}  // namespace weft::controller
