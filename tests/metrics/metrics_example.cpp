// Prints the /metrics exposition of a small sample mesh (per-pair series on), for
// `promtool check metrics` (tests/metrics/promtool_check.sh) and for reading docs/metrics.md against.
#include <chrono>
#include <cstdio>

#include "controller/metrics_renderer.hpp"
#include "controller/request_stats.hpp"
#include "fake_mesh_view.hpp"

using namespace weft::controller;
using weft::proto::Protocol;

int main() {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  testing::FakeMeshView v;
  v.agent_list = {testing::agent("host-1", AgentState::up, {Protocol::udp, Protocol::tcp}),
                  testing::agent("host-2", AgentState::up, {Protocol::udp, Protocol::tcp}),
                  testing::agent("host \"3\"", AgentState::down, {Protocol::udp})};
  v.agent_list[2].alarms = {{"agent_down", "no report for 60 s", now}};
  const int64_t t = now - 2'000'000'000;
  v.pairs = {
      testing::pair(Protocol::udp, "host-1", "host-2", t, 100, 30, 80'000, 250'000),
      testing::pair(Protocol::udp, "host-2", "host-1", t, 100, 0, 90'000, 200'000),
      testing::pair(Protocol::udp, "host-2", "host \"3\"", now - 60'000'000'000, 100, 0, 90'000, 200'000),
      testing::pair(Protocol::tcp, "host-1", "host-2", t, 100, 0, 120'000, 300'000)};
  std::string text = render_metrics(v, {.per_pair = true}, now);
  // What GET /metrics appends: the server-side request timings (a route asked twice, one not at all).
  RequestStats stats({"GET /healthz", "POST /api/v1/report"});
  weft::net::http::RequestTiming timing{"GET", "/healthz", 200, 50'000, 2'000'000, 300'000, 10'000};
  stats.record(timing);
  timing.status = 503;
  stats.record(timing);
  PromText p;
  stats.render(p);
  text += p.text();
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}
