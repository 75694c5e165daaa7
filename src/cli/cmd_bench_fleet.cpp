// `weft bench fleet --agents 10000 --targets 100 --seconds 40 --json`: one controller holding a
// fleet of simulated agents (sim/http_fleet.hpp: one kept-open connection each, registering,
// reporting every second, re-checking the pinglist every 10 s) while an API client measures how
// fast /healthz, a rack's mesh and a registration answer. Printed: whether every agent registered,
// the latency percentiles of each kind of request, the controller's CPU and RSS (and RSS per agent)
// and the controller's own account of its request stages.
//
// The controller runs in a forked child (sim/forked_controller.hpp), so its CPU and memory are
// measured alone. With --tls the controller serves HTTPS (a throw-away self-signed certificate) and
// every connection does one TLS handshake when it opens, then stays open (sim/bench_tls.hpp).
#include <fmt/format.h>
#include <openssl/ssl.h>
#include <sys/resource.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "base/clock.hpp"
#include "base/proc_stats.hpp"
#include "cli/command_registry.hpp"
#include "net/socket.hpp"
#include "sim/bench_figures.hpp"
#include "sim/bench_tls.hpp"
#include "sim/forked_controller.hpp"
#include "sim/http_fleet.hpp"
#include "sim/http_load_client.hpp"
#include "sim/server_stages.hpp"

namespace {

using namespace weft::sim;
using nlohmann::json;

struct Options {
  FleetOptions fleet;
  double seconds = 40;
  int controller_cpu = -1;  // >= 0: pin the controller child to this CPU
  int sim_cpu = -1;         // >= 0: pin the simulated agents and the API client to this CPU
  int controller_nice = 0;  // the controller child's nice value (negative: ahead of other work)
  bool json = false;
  bool tls = false;  // HTTPS on every connection
};

double pct_ms(const std::vector<int64_t>& v, double p) { return percentile_ms(v, p); }

std::string controller_yaml(const Options& o, const std::string& dir) {
  std::string tls;
  if (o.tls) {
    if (auto st = write_bench_certificate(dir); !st) fmt::print(stderr, "{}\n", st.error().message);
    tls = fmt::format("tls_cert: {0}/bench-cert.pem\ntls_key: {0}/bench-key.pem\n", dir);
  }
  std::string y =
      tls + fmt::format(
                "listen: 127.0.0.1:{}\nstore: sqlite:{}/fleet.db\nwindow: 10s\nreport_interval: 1s\n"
                "agent_down_after: 30s\nhttp_max_connections_per_address: {}\ngroups:\n",
                o.fleet.port, dir, o.fleet.agents_per_address + 16);
  for (size_t r = 0; r * 100 < o.fleet.agents; ++r)
    y += fmt::format("  - {{name: rack-{:03d}, protocols: [udp], members: ['agent-{:03d}?\?']}}\n", r, r);
  return y;
}

weft::Result<std::unique_ptr<ForkedController>> start_controller(const Options& o) {
  auto controller = ForkedController::start(
      "bench fleet", [&](const std::string& dir) { return controller_yaml(o, dir); }, {}, o.controller_cpu);
  if (controller && o.controller_nice != 0) {
    // Every thread of the child: on Linux the nice value is per thread.
    for (const auto& t :
         std::filesystem::directory_iterator(fmt::format("/proc/{}/task", (*controller)->pid())))
      setpriority(PRIO_PROCESS, static_cast<id_t>(std::stoi(t.path().filename().string())),
                  o.controller_nice);
  }
  return controller;
}

// What the controller says it holds after the run, and how long its whole-mesh answers take.
struct ControllerView {
  size_t up = 0, agents_listed = 0, pairs = 0;
  json stages;
  double metrics_ms = 0, suspects_ms = 0;  // one whole-mesh answer each, computed for the request
};

ControllerView read_controller_view(uint16_t port, ssl_ctx_st* tls) {
  ControllerView v;
  HttpLoadConnection c;
  if (!c.connect_loopback(port, tls)) return v;
  if (auto r = c.exchange("GET /api/v1/agents HTTP/1.1\r\nHost: bench\r\n\r\n"); r && r->status == 200) {
    auto j = json::parse(r->body, nullptr, false);
    if (j.is_object())
      for (const auto& ag : j["agents"])
        if (ag["name"].get<std::string>().starts_with("agent-")) {
          v.agents_listed++;
          v.up += ag["state"] == "up";
        }
  }
  if (auto r = c.exchange("GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n"); r && r->status == 200) {
    auto j = json::parse(r->body, nullptr, false);
    if (j.is_object()) v.pairs = j.value("pairs", size_t{0});
  }
  int64_t t = weft::mono_ns();
  if (auto r = c.exchange("GET /api/v1/suspects?protocol=udp HTTP/1.1\r\nHost: bench\r\n\r\n");
      r && r->status == 200)
    v.suspects_ms = static_cast<double>(weft::mono_ns() - t) / 1e6;
  t = weft::mono_ns();
  if (auto r = c.exchange("GET /metrics HTTP/1.1\r\nHost: bench\r\n\r\n"); r && r->status == 200) {
    v.metrics_ms = static_cast<double>(weft::mono_ns() - t) / 1e6;
    v.stages = server_stages(r->body);
  }
  return v;
}

// The process figures of the controller child at each step of the run.
struct Footprint {
  weft::ProcStats idle, connected, before, after;
};

// The fleet's and the API client's latencies in one table; the number of failed requests.
size_t merge_latencies(Latencies& fleet, Latencies& api, json& out) {
  for (int k = kApiHealthz; k < kKinds; ++k) {
    fleet.ns[k] = std::move(api.ns[k]);
    fleet.errors[k] = api.errors[k];
  }
  if (fleet.first_error.empty()) fleet.first_error = api.first_error;
  out = json::object();
  size_t errors = 0;
  for (int k = 0; k < kKinds; ++k) {
    errors += fleet.errors[k];
    out[kKindNames[k]] = {{"count", fleet.ns[k].size()},
                          {"errors", fleet.errors[k]},
                          {"p50_ms", pct_ms(fleet.ns[k], 0.5)},
                          {"p99_ms", pct_ms(fleet.ns[k], 0.99)},
                          {"max_ms", pct_ms(fleet.ns[k], 1.0)}};
  }
  return errors;
}

void print_text(const Options& o, const json& out, const HttpFleet& fleet, Latencies& L,
                const ControllerView& v, const Footprint& f) {
  const double secs = out["seconds"].get<double>();
  fmt::print(
      "fleet: {} agents x {} targets for {:.0f} s: {} registered in {:.1f} s, {} up, {} pairs held, {} "
      "request errors, {} late reports\n",
      o.fleet.agents, o.fleet.targets, secs, fleet.registered(), out["register_all_s"].get<double>(), v.up,
      v.pairs, out["request_errors"].get<size_t>(), fleet.late());
  for (int k = 0; k < kKinds; ++k)
    fmt::print("  {:20s} {:7} requests  p50 {:7.2f} ms  p99 {:7.2f} ms  max {:7.2f} ms\n", kKindNames[k],
               L.ns[k].size(), pct_ms(L.ns[k], 0.5), pct_ms(L.ns[k], 0.99), pct_ms(L.ns[k], 1.0));
  fmt::print(
      "  controller: CPU {:.0f}% of a core, RSS {} MB ({:.0f} bytes per agent, {:.0f} per connection "
      "alone)\n",
      out["controller_cpu_percent"].get<double>(), f.after.rss_kb / 1024,
      out["rss_per_agent_bytes"].get<double>(), out["rss_per_connection_bytes"].get<double>());
  for (const auto& [route, st] : v.stages.items())
    for (const auto& [stage, x] : st.items())
      fmt::print("  server {:28s} {:8s} {:7} requests  p50 <= {} ms  p99 <= {} ms\n", route, stage,
                 x["count"].get<double>(), x["p50_le_ms"].dump(), x["p99_le_ms"].dump());
  fmt::print("  first /api/v1/suspects {:.0f} ms, first /metrics {:.0f} ms (whole mesh, after the run)\n",
             v.suspects_ms, v.metrics_ms);
  fmt::print("  load average {:.1f} -> {:.1f}\n", out["load_average_start"].get<double>(),
             out["load_average_end"].get<double>());
  if (!L.first_error.empty()) fmt::print("first error: {}\n", L.first_error);
}

int run_fleet(const Options& o) {
  if (o.sim_cpu >= 0 && !pin_to_cpu(o.sim_cpu)) {
    fmt::print(stderr, "bench fleet: cannot pin the simulator to CPU {}\n", o.sim_cpu);
    return 1;
  }
  const double load_start = load_average();
  if (uint64_t fds = weft::net::raise_fd_limit(); fds < o.fleet.agents + 64) {
    fmt::print(stderr, "bench fleet: the descriptor limit ({}) is below {} agents + 64\n", fds,
               o.fleet.agents);
    return 1;
  }
  auto controller = start_controller(o);
  if (!controller) {
    fmt::print(stderr, "{}\n", controller.error().message);
    return 1;
  }
  const pid_t child = (*controller)->pid();
  Footprint f;
  f.idle = weft::read_proc_stats(child);
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> tls(o.tls ? bench_tls_client_context() : nullptr,
                                                        SSL_CTX_free);
  if (tls) SSL_CTX_set_mode(tls.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  HttpFleet fleet(o.fleet, tls.get());
  if (auto st = fleet.connect_all(); !st) {
    fmt::print(stderr, "bench fleet: {}\n", st.error().message);
    return 1;
  }
  f.connected = weft::read_proc_stats(child);
  const double reg_s = fleet.register_all(120 * kSecond);
  f.before = weft::read_proc_stats(child);
  std::atomic<bool> stop{false};
  Latencies api;
  std::thread api_thread([&] { api_client(o.fleet, tls.get(), stop, api); });
  const int64_t t0 = weft::mono_ns();
  fleet.run(o.seconds);
  const double secs = static_cast<double>(weft::mono_ns() - t0) / 1e9;
  stop = true;
  api_thread.join();
  f.after = weft::read_proc_stats(child);
  const ControllerView v = read_controller_view(o.fleet.port, tls.get());
  (*controller)->stop();

  Latencies& L = fleet.lat();
  json lat;
  const size_t errors = merge_latencies(L, api, lat);
  const double cpu_s = static_cast<double>(f.after.cpu_ns - f.before.cpu_ns) / 1e9;
  const auto per_agent = [&](int64_t from_kb, int64_t to_kb) {
    return static_cast<double>(to_kb - from_kb) * 1024.0 / static_cast<double>(o.fleet.agents);
  };
  json out{{"agents", o.fleet.agents},
           {"tls", o.tls},
           {"targets", o.fleet.targets},
           {"seconds", secs},
           {"registered", fleet.registered()},
           {"agents_listed", v.agents_listed},
           {"agents_up", v.up},
           {"register_all_s", reg_s},
           {"pairs_held", v.pairs},
           {"windows_sent", fleet.windows_sent()},
           {"late_reports", fleet.late()},
           {"request_errors", errors},
           {"latency", lat},
           {"controller_cpu_percent", cpu_s / secs * 100.0},
           {"controller_cpu", o.controller_cpu},
           {"sim_cpu", o.sim_cpu},
           {"load_average_start", load_start},
           {"load_average_end", load_average()},
           {"controller_nice", o.controller_nice},
           {"first_suspects_ms", v.suspects_ms},
           {"first_metrics_ms", v.metrics_ms},
           {"server_stages", v.stages},
           {"controller_rss_kb_idle", f.idle.rss_kb},
           {"controller_rss_kb_connected", f.connected.rss_kb},
           {"controller_rss_kb", f.after.rss_kb},
           {"controller_rss_hwm_kb", f.after.hwm_kb},
           {"rss_per_connection_bytes", per_agent(f.idle.rss_kb, f.connected.rss_kb)},
           {"rss_per_agent_bytes", per_agent(f.idle.rss_kb, f.after.rss_kb)}};
  if (!L.first_error.empty()) out["first_error"] = L.first_error;
  if (o.json)
    fmt::print("{}\n", out.dump());
  else
    print_text(o, out, fleet, L, v, f);
  return errors == 0 && fleet.registered() == o.fleet.agents && v.up == o.fleet.agents ? 0 : 1;
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto* sub = root.bench->add_subcommand(
      "fleet",
      "One controller holding a fleet of simulated agents on kept-open connections (docs/BENCHMARKS.md)");
  auto o = std::make_shared<Options>();
  sub->add_option("--agents", o->fleet.agents, "Simulated agents (one connection each)")
      ->capture_default_str();
  sub->add_option("--targets", o->fleet.targets, "Windows per agent per 10 s window")->capture_default_str();
  sub->add_option("--seconds", o->seconds, "How long they report")->capture_default_str();
  sub->add_option("--agents-per-address", o->fleet.agents_per_address,
                  "Agents sharing one 127.1.x.y source address")
      ->capture_default_str();
  sub->add_option("--port", o->fleet.port, "Loopback port for the controller")->capture_default_str();
  sub->add_option("--controller-cpu", o->controller_cpu, "Pin the controller to this CPU (-1: no)")
      ->capture_default_str();
  sub->add_option("--sim-cpu", o->sim_cpu, "Pin the simulated agents and API client to this CPU (-1: no)")
      ->capture_default_str();
  sub->add_option(
         "--controller-nice", o->controller_nice,
         "Nice value of the controller's threads (e.g. -10: ahead of other work on a shared machine)")
      ->capture_default_str();
  sub->add_flag("--tls", o->tls,
                "HTTPS: the controller with a throw-away self-signed certificate, one handshake per agent "
                "connection");
  sub->add_flag("--json", o->json, "Print one JSON object");
  sub->callback([o] { weft::cli::set_exit_code(run_fleet(*o)); });
}};

}  // namespace
