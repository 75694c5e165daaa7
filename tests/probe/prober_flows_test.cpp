// K flows per target (issue 24): the prober probes one target from K source ports, round-robin at
// the target's own rate, and its windows carry each flow's counters beside the pair's.
#include <set>

#include "prober_harness.hpp"

using namespace probe_test;

// A responder that sees which source ports probe it and drops every probe of one of them: that
// flow (one ECMP path, in a real fabric) loses all, the others nothing, and the window says so.
TEST(ProberFlows, DistinctSourcePortsEachWithItsOwnCounters) {
  std::mutex mu;
  std::map<uint16_t, int> seen;  // source port -> probes received
  uint16_t dropped = 0;
  FakeResponder fake([&](FakeResponder& f, wire::Packet& p, const net::SocketAddress& from) {
    std::lock_guard lk(mu);
    ++seen[from.port()];
    if (dropped == 0 && seen.size() == 3) dropped = from.port();  // the third flow to show up
    if (from.port() != dropped) f.send(p, from);
  });
  auto cfg = fast_config();
  cfg.flows = 4;
  cfg.timeout = 100ms;
  auto p = Prober::create(cfg);
  ASSERT_TRUE(p) << p.error().message;
  (*p)->set_targets({{"fake", "127.0.0.1", fake.port()}});
  Collected c;
  auto ctr = run_for(**p, 3000ms, c, [](const ProberCounters& k) { return k.sent >= 160; });
  fake.stop();
  std::lock_guard lk(mu);
  ASSERT_EQ(seen.size(), 4u) << "four flows, four source ports";
  ASSERT_NE(dropped, 0);
  // Round-robin: each flow got a quarter of the probes (the target's rate is unchanged).
  // (Within a few: the last probes may still be on their way, and a stalled loop skips slots.)
  for (auto& [port, n] : seen) EXPECT_NEAR(n, ctr.sent / 4.0, 3.0 + ctr.sent / 20.0) << port;
  const auto& flows = c.flows["fake"];
  ASSERT_EQ(flows.size(), 4u);
  uint64_t sum_sent = 0;
  for (auto& [port, f] : flows) {
    EXPECT_TRUE(seen.contains(port)) << "the window's port " << port << " is one the responder saw";
    EXPECT_GT(f.sent, 0u);
    if (port == dropped) {
      EXPECT_EQ(f.lost, f.sent) << "the dropped flow lost every probe";
      EXPECT_EQ(f.received, 0u);
      EXPECT_EQ(f.network_rtt_p50_ns, 0);
    } else {
      EXPECT_EQ(f.lost, 0u) << port;
      EXPECT_EQ(f.received, f.sent) << port;
      EXPECT_GT(f.network_rtt_p50_ns, 0) << port;
    }
    sum_sent += f.sent;
  }
  const auto& w = c.totals["fake"];
  EXPECT_EQ(sum_sent, w.sent) << "the flows add up to the pair";
  EXPECT_NEAR(static_cast<double>(w.lost) / static_cast<double>(w.sent), 0.25, 0.05);
}

// One flow (the default, and `weft ping`): one socket, no per-flow detail in the windows.
TEST(ProberFlows, OneFlowReportsNoFlows) {
  RunningResponder r;
  auto cfg = fast_config();
  auto p = Prober::create(cfg);
  ASSERT_TRUE(p);
  (*p)->set_targets({{"r", "127.0.0.1", r.r->udp_port()}});
  Collected c;
  run_for(**p, 1000ms, c);
  EXPECT_GT(c.totals["r"].received, 0u);
  EXPECT_TRUE(c.flows["r"].empty());
}

TEST(ProberFlows, FlowCountIsChecked) {
  auto cfg = fast_config();
  cfg.flows = 0;
  EXPECT_FALSE(Prober::create(cfg));
  cfg.flows = 65;
  auto p = Prober::create(cfg);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("flows must be 1..64"), std::string::npos) << p.error().message;
}

// Paris traceroute on loopback: nothing routes between, so each flow's first TTL-limited probe
// reaches the responder, whose reply ends the trace at the target. The trace probes' replies count
// in no window and as no unknown session or malformed datagram. (tests/lab_probe/paris_trace_lab.sh
// traces through a router namespace.)
TEST(ProberFlows, TracesEachFlowAndItsRepliesCountNowhere) {
  RunningResponder r;
  auto cfg = fast_config();
  cfg.flows = 3;
  cfg.trace_interval = 10s;  // each flow once in this test
  cfg.trace_gap = 20ms;
  std::mutex mu;
  std::vector<weft::proto::PathTrace> paths;
  auto p = Prober::create(cfg);
  ASSERT_TRUE(p) << p.error().message;
  (*p)->set_on_path([&](weft::proto::PathTrace&& t) {
    std::lock_guard lk(mu);
    paths.push_back(std::move(t));
  });
  (*p)->set_targets({{"r", "127.0.0.1", r.r->udp_port()}});
  Collected c;
  // Until every flow was traced and a few 200 ms windows have closed.
  auto ctr = run_for(**p, 4000ms, c, [](const ProberCounters& k) { return k.traces >= 3 && k.sent >= 80; });
  std::lock_guard lk(mu);
  ASSERT_EQ(paths.size(), 3u) << "one trace per flow";
  std::set<uint16_t> ports;
  for (const auto& t : paths) {
    EXPECT_EQ(t.target, "r");
    EXPECT_EQ(t.dst_port, r.r->udp_port());
    EXPECT_TRUE(t.reached);
    EXPECT_EQ(t.hops, (std::vector<std::string>{"127.0.0.1"}));
    EXPECT_TRUE(c.flows["r"].contains(t.src_port)) << "traced on the flow's own source port";
    ports.insert(t.src_port);
  }
  EXPECT_EQ(ports.size(), 3u);
  EXPECT_EQ(ctr.trace_probes, 3u);
  EXPECT_EQ(ctr.unknown_session, 0u);
  EXPECT_EQ(ctr.malformed, 0u);
  const auto& w = c.totals["r"];
  EXPECT_EQ(w.malformed, 0u);
  EXPECT_EQ(w.received + w.lost, w.sent);
  EXPECT_LE(w.sent, ctr.sent) << "trace probes are in no window";
}
