// `weft bench ingest --agents A --targets T --json`: how many pair-windows per second one controller
// takes in through its real ingest path (HTTP on loopback, binary reports, validation, dedup, the
// embedded SQLite store with group commit, the in-memory latest mesh).
//
// The controller runs in a forked child process so that its CPU and memory are measured alone;
// the parent plays the agents: it pre-encodes every report (one report = one agent's windows for
// all its targets, as agents batch them) as a complete HTTP request and then sends them over
// several keep-alive connections (sim/http_load_client.hpp: one send() per request).
#include <fmt/format.h>
#include <httplib.h>
#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/log.hpp"
#include "base/proc_stats.hpp"
#include "cli/command_registry.hpp"
#include "controller/auth.hpp"
#include "controller/controller.hpp"
#include "proto/report.hpp"
#include "sim/bench_tls.hpp"
#include "sim/forked_controller.hpp"
#include "sim/http_load_client.hpp"
#include "sim/sample_windows.hpp"

namespace {

struct Options {
  size_t agents = 1000;
  size_t targets = 300;
  size_t flows = 0;  // per-flow counters per window (issue 24: an agent sends 8 for UDP); 0: none
  size_t rounds = 10;
  // The configuration docs/BENCHMARKS.md measures, so the plain
  // `weft bench ingest --agents 1000 --targets 300 --json` runs it: more connections than cores
  // because each request waits for its group commit while others are decoded.
  size_t connections = 8;
  size_t http_threads = 10;
  uint16_t port = 18095;
  bool json = false;
  std::string store;  // empty: the embedded SQLite store in a temp dir
  // Names are PREFIX00000..: several benches, one per controller replica on one shared store,
  // simulate different agents (bench/redis_cluster_ingest.sh).
  std::string agent_prefix = "agent-";
  bool tls = false;  // HTTPS (a throw-away self-signed certificate), kept-open connections
  // Prometheus remote write from the controller (docs/BENCHMARKS.md "Remote write through
  // outages"): the receiver's URL ("" : off) and the spool ("" : the default beside the database,
  // "off": the queue in memory only), so the spool's cost on the ingest can be measured.
  std::string remote_write, remote_write_spool;
};

int64_t unix_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double self_cpu_s() { return static_cast<double>(weft::self_cpu_ns()) / 1e9; }

// Agents authenticate as real ones do, each with its own token (controller/auth.hpp), so the
// identity checks are part of what is measured.
constexpr const char* kBenchSecret = "bench-ingest-agent-secret";

std::string agent_name(const Options& o, size_t a) { return fmt::format("{}{:05d}", o.agent_prefix, a); }

std::string controller_yaml(const Options& o, const std::string& dir) {
  std::string tls;
  if (o.tls) {
    if (auto st = weft::sim::write_bench_certificate(dir); !st)
      fmt::print(stderr, "{}\n", st.error().message);
    tls = fmt::format("tls_cert: {0}/bench-cert.pem\ntls_key: {0}/bench-key.pem\n", dir);
  }
  std::string rw;
  if (!o.remote_write.empty()) {
    rw = fmt::format("remote_write: {}\n", o.remote_write);
    if (!o.remote_write_spool.empty()) rw += fmt::format("remote_write_spool: {}\n", o.remote_write_spool);
  }
  return tls + rw +
         fmt::format(
             "listen: 127.0.0.1:{}\nstore: {}\nwindow: 10s\n"
             "agent_down_after: 1h\nhttp_threads: {}\nmax_body_bytes: 67108864\nagent_secret: {}\n"
             "groups:\n  - {{name: all, protocols: [udp], members: ['*']}}\n",
             o.port, o.store.empty() ? "sqlite:" + dir + "/bench.db" : o.store, o.http_threads, kBenchSecret);
}

// In the controller's child before it serves: the agents register as they would (the registry is
// part of what a controller holds) and fetch their pinglists once, as real agents do right after.
void register_agents(const Options& o, weft::controller::Controller& c) {
  for (size_t a = 0; a < o.agents; ++a)
    c.mesh().register_agent({agent_name(o, a),
                             {fmt::format("10.{}.{}.{}", a >> 16 & 255, a >> 8 & 255, a & 255)},
                             {weft::proto::Protocol::udp},
                             "bench",
                             7777,
                             0},
                            unix_ns());
  for (size_t a = 0; a < o.agents; ++a) (void)c.mesh().pinglist_for(agent_name(o, a));
}

// Every report as a complete HTTP request, before the clock starts: round r of agent a has its
// T windows starting at base + r * 10 s, to registered peers all in its pinglist.
std::vector<std::string> encode_reports(const Options& o, size_t& body_bytes) {
  const int64_t base = unix_ns() - static_cast<int64_t>(o.rounds + 2) * 10'000'000'000;
  std::vector<std::string> requests;
  requests.reserve(o.agents * o.rounds);
  for (size_t r = 0; r < o.rounds; ++r)
    for (size_t a = 0; a < o.agents; ++a) {
      weft::proto::Report rep;
      rep.agent = agent_name(o, a);
      rep.seq = r;
      rep.windows.reserve(o.targets);
      for (size_t t = 0; t < o.targets; ++t) {
        rep.windows.push_back(weft::sim::sample_window(agent_name(o, (a + t + 1) % o.agents),
                                                       base + static_cast<int64_t>(r) * 10'000'000'000,
                                                       a * 31 + t));
        auto& w = rep.windows.back();
        for (size_t k = 0; k < o.flows; ++k)  // the pair's probes spread over the flows
          w.flows.push_back({static_cast<uint16_t>(40000 + k), w.sent / o.flows, w.received / o.flows,
                             w.lost / o.flows, w.network_rtt.p50_ns});
      }
      std::string body = weft::proto::encode_binary(rep);
      body_bytes += body.size();
      requests.push_back(
          weft::sim::build_post_request("/api/v1/report", weft::proto::kBinaryContentType, body,
                                        "Bearer " + weft::controller::agent_token(kBenchSecret, rep.agent)));
    }
  return requests;
}

// What the controller answered: windows it accepted, requests it refused (and the first reason).
struct Answers {
  std::atomic<size_t> errors{0}, accepted{0};
  std::mutex mu;
  std::string first_error;
};

// Sends every request over `connections` kept-open connections, each taking the next request.
void send_all(const Options& o, const std::vector<std::string>& requests, SSL_CTX* tls, Answers& answers) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> clients;
  for (size_t c = 0; c < o.connections; ++c)
    clients.emplace_back([&] {
      weft::sim::HttpLoadConnection conn;
      auto connected = conn.connect_loopback(o.port, tls);
      for (size_t i; (i = next.fetch_add(1)) < requests.size();) {
        auto res = connected ? conn.exchange(requests[i]) : std::unexpected(connected.error());
        if (!res || res->status != 200) {
          answers.errors++;
          std::lock_guard lk(answers.mu);
          if (answers.first_error.empty())
            answers.first_error =
                res ? fmt::format("HTTP {}: {}", res->status, res->body) : res.error().message;
          continue;
        }
        auto j = nlohmann::json::parse(res->body, nullptr, false);
        if (j.is_object()) answers.accepted += j.value("accepted", size_t{0});
      }
    });
  for (auto& t : clients) t.join();
}

size_t pairs_held(const Options& o) {
  httplib::Client cli(fmt::format("{}://127.0.0.1:{}", o.tls ? "https" : "http", o.port));
  cli.enable_server_certificate_verification(false);  // the bench's own throw-away certificate
  if (auto res = cli.Get("/healthz"); res && res->status == 200) {
    auto j = nlohmann::json::parse(res->body, nullptr, false);
    if (j.is_object()) return j.value("pairs", size_t{0});
  }
  return 0;
}

int run_bench(const Options& o) {
  if (o.targets >= o.agents) {
    fmt::print(stderr, "weft bench ingest: --targets must be below --agents (targets are other agents)\n");
    return 2;
  }
  auto controller = weft::sim::ForkedController::start(
      "bench", [&](const std::string& dir) { return controller_yaml(o, dir); },
      [&](weft::controller::Controller& c) { register_agents(o, c); });
  if (!controller) {
    fmt::print(stderr, "{}\n", controller.error().message);
    return 1;
  }
  const pid_t child = (*controller)->pid();
  size_t body_bytes = 0;
  const std::vector<std::string> requests = encode_reports(o, body_bytes);
  const weft::ProcStats before = weft::read_proc_stats(child);
  const double client_before = self_cpu_s();
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> tls_client(
      o.tls ? weft::sim::bench_tls_client_context() : nullptr, SSL_CTX_free);
  Answers answers;
  const auto t0 = std::chrono::steady_clock::now();
  send_all(o, requests, tls_client.get(), answers);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const weft::ProcStats after = weft::read_proc_stats(child);
  const double controller_cpu_s = static_cast<double>(after.cpu_ns - before.cpu_ns) / 1e9;
  const double client_cpu = self_cpu_s() - client_before;
  const size_t pairs = pairs_held(o);
  (*controller)->stop();

  const size_t windows = o.agents * o.targets * o.rounds;
  const size_t accepted = answers.accepted.load(), errors = answers.errors.load();
  const auto per_window = [&](double cpu_s) {
    return accepted ? cpu_s * 1e6 / static_cast<double>(accepted) : 0.0;
  };
  nlohmann::json out{{"windows_per_s", static_cast<double>(accepted) / secs},
                     {"cpu_percent", controller_cpu_s / secs * 100.0},
                     {"rss_kb", after.rss_kb},
                     {"agents", o.agents},
                     {"targets", o.targets},
                     {"rounds", o.rounds},
                     {"tls", o.tls},
                     {"windows_sent", windows},
                     {"windows_accepted", accepted},
                     {"request_errors", errors},
                     {"seconds", secs},
                     // Controller CPU time per window: the figure that does not depend on what else
                     // the machine is running (windows_per_s does).
                     {"cpu_us_per_window", per_window(controller_cpu_s)},
                     // The simulated agents' CPU time per window (this process): they share the
                     // machine with the controller, so they have to be cheap.
                     {"client_cpu_us_per_window", per_window(client_cpu)},
                     {"bytes_per_window", static_cast<double>(body_bytes) / static_cast<double>(windows)},
                     {"pairs_held", pairs},
                     {"rss_growth_per_pair_bytes",
                      pairs ? static_cast<double>(after.rss_kb - std::min(after.rss_kb, before.rss_kb)) *
                                  1024.0 / static_cast<double>(pairs)
                            : 0.0}};
  if (!answers.first_error.empty()) out["first_error"] = answers.first_error;
  if (o.json) {
    fmt::print("{}\n", out.dump());
  } else {
    fmt::print(
        "ingest: {:.0f} pair-windows/s ({} agents x {} targets x {} rounds in {:.2f} s), controller CPU "
        "{:.0f}% ({:.2f} us per window), RSS {} MB, {:.0f} bytes of RSS growth per pair held ({} pairs), {} "
        "request errors\n",
        out["windows_per_s"].get<double>(), o.agents, o.targets, o.rounds, secs,
        out["cpu_percent"].get<double>(), out["cpu_us_per_window"].get<double>(), after.rss_kb / 1024,
        out["rss_growth_per_pair_bytes"].get<double>(), pairs, errors);
    if (!answers.first_error.empty()) fmt::print("first error: {}\n", answers.first_error);
  }
  return errors == 0 && accepted == windows ? 0 : 1;
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto* sub =
      root.bench->add_subcommand("ingest", "Controller ingest throughput with simulated agents over HTTP");
  auto o = std::make_shared<Options>();
  sub->add_option("--agents", o->agents, "Simulated agents")->capture_default_str();
  sub->add_option("--targets", o->targets, "Targets per agent (windows per report)")->capture_default_str();
  sub->add_option("--rounds", o->rounds, "Reports per agent")->capture_default_str();
  sub->add_option("--flows", o->flows, "Per-flow counters in each window (0..64; agents send 8 for udp)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  sub->add_option("--connections", o->connections, "Concurrent HTTP connections")->capture_default_str();
  sub->add_option("--http-threads", o->http_threads, "Controller HTTP worker threads")->capture_default_str();
  sub->add_option("--store", o->store,
                  "Store spec, e.g. redis-cluster://127.0.0.1:7000 (default: SQLite in a temp dir)");
  sub->add_option("--agent-prefix", o->agent_prefix, "Simulated agents' names: PREFIX00000, ...")
      ->capture_default_str();
  sub->add_option("--port", o->port, "Loopback port for the controller")->capture_default_str();
  sub->add_flag("--tls", o->tls,
                "HTTPS: the controller with a throw-away self-signed certificate, the agents' connections "
                "kept open");
  sub->add_option("--remote-write", o->remote_write,
                  "The controller pushes every window to this remote-write URL (e.g. "
                  "http://127.0.0.1:9090/api/v1/write)");
  sub->add_option(
      "--remote-write-spool", o->remote_write_spool,
      "With --remote-write: the spool file, or off (the queue in memory only); default beside the "
      "database");
  sub->add_flag("--json", o->json, "Print one JSON object");
  sub->callback([o] { weft::cli::set_exit_code(run_bench(*o)); });
}};

}  // namespace
