// `weft bench agents --agents 1000 --group-size 16 --seconds 60 --json`: one controller and N real
// agents. Where `weft bench fleet` plays the agents' HTTP from one thread, this runs agent::Agent,
// the code `weft agent` runs: each agent registers, syncs its pinglist, probes its group mates with
// its own UDP and TCP probers, answers them with its own responder, and reports its windows. Agent i
// has its own loopback address (PREFIX.(i / 250).(i % 250 + 1), e.g. 127.2.0.1), so every probe is
// a real packet between two distinct addresses, and is in group grp-NNN with the group-size - 1
// agents next to it (names gNNN-MMM).
//
// The controller runs in a forked child (embedded SQLite store, as in bench fleet); the agents run
// in --processes forked children ("slices", sim/agent_slice.hpp), so the CPU and memory of each
// side are read from /proc alone. After all agents are up and a warm-up of two windows, the
// benchmark measures for --seconds: an API client times /healthz and the groups' meshes (JSON) and
// tallies the windows it sees; at the end every expected pair must have a window that began during
// the measurement. Printed: registration, pairs with such a window of those expected, loss over the
// windows seen, API latency percentiles, CPU and RSS of the controller and of the agents (per agent).
#include <dirent.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "agent/agent.hpp"
#include "base/clock.hpp"
#include "base/proc_stats.hpp"
#include "cli/command_registry.hpp"
#include "controller/auth.hpp"
#include "net/socket.hpp"
#include "proto/protocol.hpp"
#include "sim/agent_slice.hpp"
#include "sim/bench_figures.hpp"
#include "sim/forked_controller.hpp"
#include "sim/http_load_client.hpp"

namespace {

using nlohmann::json;

constexpr const char* kSecret = "bench-agents-agent-secret";  // each agent's token: controller/auth.hpp
constexpr size_t kPerSubnet = 250;                            // agents per PREFIX.X.0/24

struct Options {
  size_t agents = 1000;
  size_t group_size = 16;
  size_t processes = 0;  // 0: one per 250 agents
  double seconds = 60;   // the measurement, after the warm-up
  double warmup = -1;    // after all are up; < 0: two windows + 3 s
  double window_s = 10;
  double udp_interval_ms = 1000;
  double tcp_interval_ms = 5000;
  std::vector<std::string> protocols{"udp", "tcp"};
  std::string prefix = "127.2";
  uint16_t port = 18199;  // the controller's
  uint16_t udp_port = 27777;
  uint16_t tcp_port = 27778;
  double register_timeout = 180;
  bool json = false;
};

std::string agent_name(size_t i, size_t g) { return fmt::format("g{:03d}-{:03d}", i / g, i % g); }
std::string agent_ip(const Options& o, size_t i) {
  return fmt::format("{}.{}.{}", o.prefix, i / kPerSubnet, i % kPerSubnet + 1);
}
size_t groups_of(const Options& o) { return (o.agents + o.group_size - 1) / o.group_size; }
size_t group_members(const Options& o, size_t g) {
  return std::min(o.group_size, o.agents - g * o.group_size);
}
std::string ms_text(double ms) { return fmt::format("{}ms", static_cast<int64_t>(ms)); }

std::string controller_yaml(const Options& o, const std::string& dir) {
  const double timeout_ms = std::min(1000.0, o.window_s * 500);  // shorter than the window
  std::string protos;
  for (const auto& p : o.protocols) protos += (protos.empty() ? "" : ", ") + p;
  std::string y = fmt::format(
      "listen: 127.0.0.1:{}\nstore: sqlite:{}/agents.db\nagent_secret: {}\nwindow: {}\nreport_interval: 1s\n"
      "pinglist_sync: 10s\nagent_down_after: 30s\nhttp_max_connections_per_address: {}\n"
      "protocols:\n  udp: {{interval: {}, timeout: {}}}\n  tcp: {{interval: {}, timeout: {}}}\ngroups:\n",
      o.port, dir, kSecret, ms_text(o.window_s * 1000), o.agents + 64, ms_text(o.udp_interval_ms),
      ms_text(timeout_ms), ms_text(o.tcp_interval_ms), ms_text(timeout_ms));
  for (size_t g = 0; g < groups_of(o); ++g)
    y += fmt::format("  - {{name: grp-{:03d}, protocols: [{}], members: ['g{:03d}-*']}}\n", g, protos, g);
  return y;
}

// Threads and open descriptors of a process, from /proc.
struct ProcCounts {
  size_t threads = 0, fds = 0;
};
ProcCounts proc_counts(pid_t pid) {
  ProcCounts c;
  std::ifstream st(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(st, line);)
    if (line.starts_with("Threads:")) c.threads = std::stoul(line.substr(8));
  if (DIR* d = opendir(fmt::format("/proc/{}/fd", pid).c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++c.fds;
    closedir(d);
  }
  return c;
}

struct Latency {
  std::vector<int64_t> ns;
  size_t errors = 0;
  json summary() const {
    return {{"count", ns.size()},
            {"errors", errors},
            {"p50_ms", weft::sim::percentile_ms(ns, 0.5)},
            {"p99_ms", weft::sim::percentile_ms(ns, 0.99)},
            {"max_ms", weft::sim::percentile_ms(ns, 1.0)}};
  }
};

// The windows the API client saw in the groups' meshes: per pair the start of its latest window,
// and every distinct window that began in the measurement once, for the loss count.
struct Tally {
  int64_t since_s = 0;                               // Unix seconds: the measurement's start
  std::map<std::string, double> latest_start;        // "proto src dst" -> window_start
  std::set<std::pair<std::string, double>> counted;  // ("proto src dst", window_start)
  uint64_t windows = 0, sent = 0, received = 0, lost = 0, windows_with_loss = 0;
  std::vector<double> rtt_p50_us;  // each counted window's network RTT median

  void add(const std::string& protocol, const json& mesh) {
    if (!mesh.is_object() || !mesh.contains("pairs")) return;
    for (const auto& p : mesh["pairs"]) {
      const std::string key = fmt::format("{} {} {}", protocol, p.value("src", ""), p.value("dst", ""));
      const double start = p.value("window_start", 0.0);
      double& latest = latest_start[key];
      latest = std::max(latest, start);
      if (start < static_cast<double>(since_s) || !counted.emplace(key, start).second) continue;
      ++windows;
      sent += p.value("sent", uint64_t{0});
      received += p.value("received", uint64_t{0});
      const uint64_t l = p.value("lost", uint64_t{0});
      lost += l;
      windows_with_loss += l > 0;
      if (auto r = p.find("network_rtt_us"); r != p.end() && r->is_object())
        if (auto p50 = r->find("p50"); p50 != r->end() && p50->is_number())
          rtt_p50_us.push_back(p50->get<double>());
    }
  }
  // Expected pairs (both ends in one group) whose latest window began in the measurement.
  size_t fresh(const Options& o, const std::string& protocol, std::string* first_missing) const {
    size_t n = 0;
    for (size_t g = 0; g < groups_of(o); ++g)
      for (size_t a = 0; a < group_members(o, g); ++a)
        for (size_t b = 0; b < group_members(o, g); ++b) {
          if (a == b) continue;
          const size_t i = g * o.group_size + a, j = g * o.group_size + b;
          auto it = latest_start.find(
              fmt::format("{} {} {}", protocol, agent_name(i, o.group_size), agent_name(j, o.group_size)));
          if (it != latest_start.end() && it->second >= static_cast<double>(since_s))
            ++n;
          else if (first_missing && first_missing->empty())
            *first_missing = fmt::format("{} {} -> {}", protocol, agent_name(i, o.group_size),
                                         agent_name(j, o.group_size));
        }
    return n;
  }
};

std::string get_request(const std::string& path) {
  return fmt::format("GET {} HTTP/1.1\r\nHost: bench\r\n\r\n", path);
}
std::string mesh_path(const std::string& protocol, size_t g) {
  return fmt::format("/api/v1/mesh?protocol={}&group=grp-{:03d}", protocol, g);
}

// The API client during the measurement: /healthz and one group's mesh in turn (groups and
// protocols round robin), one request every 50 ms on a kept-open connection.
void api_client(const Options& o, const std::atomic<bool>& stop, Latency& healthz, Latency& mesh,
                Tally& tally) {
  weft::sim::HttpLoadConnection c;
  if (!c.connect_loopback(o.port)) return;
  const size_t groups = groups_of(o);
  for (size_t i = 0; !stop.load(); ++i) {
    const bool is_mesh = i % 2 == 1;
    const std::string& protocol = o.protocols[i / 2 % o.protocols.size()];
    const std::string req =
        get_request(is_mesh ? mesh_path(protocol, i / 2 / o.protocols.size() % groups) : "/healthz");
    const int64_t t0 = weft::mono_ns();
    auto r = c.exchange(req);
    Latency& l = is_mesh ? mesh : healthz;
    l.ns.push_back(weft::mono_ns() - t0);
    if (!r || r->status != 200)
      l.errors++;
    else if (is_mesh)
      tally.add(protocol, json::parse(r->body, nullptr, false));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// The agents the controller lists as up (fresh, one page), and the alarms they carry by kind.
struct AgentsSeen {
  size_t listed = 0, up = 0;
  std::map<std::string, size_t> alarms;
};
AgentsSeen agents_seen(weft::sim::HttpLoadConnection& c) {
  AgentsSeen s;
  auto r = c.exchange(get_request("/api/v1/agents?limit=10000"));
  if (!r || r->status != 200) return s;
  auto j = json::parse(r->body, nullptr, false);
  if (!j.is_object() || !j.contains("agents")) return s;
  for (const auto& a : j["agents"]) {
    s.listed++;
    s.up += a.value("state", "") == "up";
    if (a.contains("alarms"))
      for (const auto& al : a["alarms"]) s.alarms[al.value("kind", "?")]++;
  }
  return s;
}

// One run of the benchmark, phase by phase; what each phase measures stays for the figures.
struct AgentsRun {
  explicit AgentsRun(const Options& opts) : o(opts) {}
  const Options& o;
  double load_start = weft::sim::load_average();
  uint64_t fd_limit = 0;
  std::unique_ptr<weft::sim::ForkedController> controller;
  std::vector<std::unique_ptr<weft::sim::AgentSlice>> slices;
  size_t start_failures = 0;
  int64_t t_start = 0;
  double start_s = 0, up_s = 0, warmup = 0, measured_s = 0;
  weft::sim::HttpLoadConnection c;
  AgentsSeen seen;
  size_t up_after_start = 0;
  std::vector<weft::ProcStats> slice0, slice1;
  std::vector<ProcCounts> counts;
  weft::ProcStats c0, c1;
  ProcCounts ccounts;
  Tally tally;
  Latency healthz, mesh;
  std::map<std::string, size_t> fresh;
  std::map<std::string, std::string> missing;
  size_t expected_per_protocol = 0;
  std::vector<weft::sim::SliceReport> reports;
  std::string stop_error;

  // The controller, then the slices, forked while this process has no thread yet.
  weft::Status start() {
    // Raised here, inherited by the slices: each agent holds ~10 descriptors, more while TCP probes
    // are open.
    fd_limit = weft::net::raise_fd_limit();
    auto ctl = weft::sim::ForkedController::start(
        "bench agents", [&](const std::string& dir) { return controller_yaml(o, dir); });
    if (!ctl) return std::unexpected(ctl.error());
    controller = std::move(*ctl);
    const size_t procs = std::clamp<size_t>(o.processes ? o.processes : (o.agents + 249) / 250, 1, o.agents);
    t_start = weft::mono_ns();
    for (size_t p = 0; p < procs; ++p) {
      std::vector<weft::agent::AgentConfig> cfgs;
      for (size_t i = p * o.agents / procs; i < (p + 1) * o.agents / procs; ++i)
        cfgs.push_back(agent_config(i));
      auto s = weft::sim::AgentSlice::start(std::move(cfgs));
      if (!s) return std::unexpected(s.error());
      start_failures += (*s)->started().start_failures;
      slices.push_back(std::move(*s));
    }
    start_s = static_cast<double>(weft::mono_ns() - t_start) / 1e9;
    if (!c.connect_loopback(o.port)) return weft::fail("bench agents: cannot connect to the controller");
    return {};
  }

  weft::agent::AgentConfig agent_config(size_t i) const {
    weft::agent::AgentConfig cfg;
    cfg.controller_url = fmt::format("http://127.0.0.1:{}", o.port);
    cfg.name = agent_name(i, o.group_size);
    cfg.token = weft::controller::agent_token(kSecret, cfg.name);
    cfg.address = agent_ip(o, i);
    cfg.udp_port = o.udp_port;
    cfg.tcp_port = o.tcp_port;
    cfg.protocols.clear();
    for (const auto& pr : o.protocols) cfg.protocols.push_back(*weft::proto::parse_protocol(pr));
    return cfg;
  }

  // Registered and up: every agent listed as up (it reported after registering).
  void wait_all_up() {
    while (weft::mono_ns() - t_start < static_cast<int64_t>(o.register_timeout * 1e9)) {
      seen = agents_seen(c);
      if (seen.up >= o.agents) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    up_s = static_cast<double>(weft::mono_ns() - t_start) / 1e9;
    up_after_start = seen.up;
  }

  // After a warm-up (pinglists settle as the last agents join, and the first window of the full
  // mesh ends): CPU and memory of every process over `seconds` while the API client asks.
  void measure() {
    warmup = o.warmup >= 0 ? o.warmup : 2 * o.window_s + 3;
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(warmup * 1000)));
    for (const auto& s : slices) slice0.push_back(weft::read_proc_stats(s->pid()));
    c0 = weft::read_proc_stats(controller->pid());
    tally.since_s = static_cast<int64_t>(weft::realtime_ns() / 1'000'000'000) + 1;
    std::atomic<bool> stop{false};
    const int64_t t_measure = weft::mono_ns();
    std::thread api([&] { api_client(o, stop, healthz, mesh, tally); });
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(o.seconds * 1000)));
    stop = true;
    api.join();
    measured_s = static_cast<double>(weft::mono_ns() - t_measure) / 1e9;
    c1 = weft::read_proc_stats(controller->pid());
    for (const auto& s : slices) {
      slice1.push_back(weft::read_proc_stats(s->pid()));
      counts.push_back(proc_counts(s->pid()));
    }
    ccounts = proc_counts(controller->pid());
  }

  // Every group's mesh until each expected pair has a window that began in the measurement (the
  // deadline only ends a run that fails).
  void await_fresh_meshes() {
    for (size_t g = 0; g < groups_of(o); ++g)
      expected_per_protocol += group_members(o, g) * (group_members(o, g) - 1);
    (void)c.connect_loopback(o.port);  // idle through the measurement: the controller may have closed it
    const int64_t final_deadline = weft::mono_ns() + static_cast<int64_t>((3 * o.window_s + 10) * 1e9);
    for (bool all = false; !all;) {
      for (const auto& p : o.protocols)
        for (size_t g = 0; g < groups_of(o); ++g)
          if (auto r = c.exchange(get_request(mesh_path(p, g))); r && r->status == 200)
            tally.add(p, json::parse(r->body, nullptr, false));
      all = true;
      for (const auto& p : o.protocols) {
        missing[p].clear();
        fresh[p] = tally.fresh(o, p, &missing[p]);
        all &= fresh[p] == expected_per_protocol;
      }
      if (all || weft::mono_ns() > final_deadline) break;
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    seen = agents_seen(c);
  }

  void stop_all() {
    for (auto& s : slices) {
      auto r = s->stop(std::chrono::seconds(120));
      if (r)
        reports.push_back(*r);
      else if (stop_error.empty())
        stop_error = r.error().message;
    }
    controller->stop();
  }

  json figures();
  void print(const json& out) const;
  bool ok() const {
    bool pairs_ok = true;
    for (const auto& p : o.protocols) pairs_ok &= fresh.at(p) == expected_per_protocol;
    return start_failures == 0 && seen.up == o.agents && pairs_ok && healthz.errors + mesh.errors == 0 &&
           stop_error.empty();
  }
};

json AgentsRun::figures() {
  // The agents' side: CPU over the measurement, RSS above what each slice held before its agents.
  double agents_cpu_s = 0;
  int64_t agents_rss_kb = 0, agents_rss_added_kb = 0;
  size_t threads = 0, fds = 0, max_fds = 0;
  for (size_t s = 0; s < slices.size(); ++s) {
    agents_cpu_s += static_cast<double>(slice1[s].cpu_ns - slice0[s].cpu_ns) / 1e9;
    agents_rss_kb += slice1[s].rss_kb;
    agents_rss_added_kb += slice1[s].rss_kb - slices[s]->started().rss_kb_before;
    threads += counts[s].threads;
    fds += counts[s].fds;
    max_fds = std::max(max_fds, counts[s].fds);
  }
  weft::sim::SliceReport tot;
  for (const auto& r : reports) tot.add_sums(r);
  const double n = static_cast<double>(o.agents);
  std::sort(tally.rtt_p50_us.begin(), tally.rtt_p50_us.end());
  json out{{"agents", o.agents},
           {"processes", slices.size()},
           {"group_size", o.group_size},
           {"groups", groups_of(o)},
           {"protocols", o.protocols},
           {"window_s", o.window_s},
           {"udp_interval_ms", o.udp_interval_ms},
           {"tcp_interval_ms", o.tcp_interval_ms},
           {"fd_limit", fd_limit},
           {"start_failures", start_failures},
           {"start_all_s", start_s},
           {"up_after_start", up_after_start},
           {"all_up_s", up_s},
           {"warmup_s", warmup},
           {"seconds", measured_s},
           {"agents_listed", seen.listed},
           {"agents_up", seen.up},
           {"alarms", seen.alarms},
           {"expected_pairs_per_protocol", expected_per_protocol},
           {"pairs_with_window", fresh},
           {"first_missing_pair", missing},
           {"windows_checked", tally.windows},
           {"probes_sent", tally.sent},
           {"probes_received", tally.received},
           {"probes_lost", tally.lost},
           {"windows_with_loss", tally.windows_with_loss},
           {"network_rtt_p50_us_median",
            tally.rtt_p50_us.empty() ? 0.0 : tally.rtt_p50_us[tally.rtt_p50_us.size() / 2]},
           {"latency", {{"api_healthz", healthz.summary()}, {"api_mesh_group", mesh.summary()}}},
           {"controller_cpu_percent", static_cast<double>(c1.cpu_ns - c0.cpu_ns) / 1e9 / measured_s * 100},
           {"controller_rss_kb", c1.rss_kb},
           {"controller_rss_hwm_kb", c1.hwm_kb},
           {"controller_threads", ccounts.threads},
           {"controller_fds", ccounts.fds},
           {"agents_cpu_percent", agents_cpu_s / measured_s * 100},
           {"agent_cpu_percent_each", agents_cpu_s / measured_s * 100 / n},
           {"agents_rss_kb", agents_rss_kb},
           {"agent_rss_kb_each", static_cast<double>(agents_rss_added_kb) / n},
           {"agent_threads", threads},
           {"agent_fds", fds},
           {"agent_fds_max_per_process", max_fds},
           {"windows_made", tot.windows_made},
           {"windows_delivered", tot.windows_delivered},
           {"reports_sent", tot.reports_sent},
           {"report_failures", tot.report_failures},
           {"prober_restarts", tot.prober_restarts},
           {"pending_windows", tot.pending_windows},
           {"dropped_windows", tot.dropped_windows},
           {"stop_s", tot.stop_s},
           {"load_average_start", load_start},
           {"load_average_end", weft::sim::load_average()}};
  if (!stop_error.empty()) out["stop_error"] = stop_error;
  return out;
}

void AgentsRun::print(const json& out) const {
  fmt::print("agents: {} real agents in {} processes, groups of {} ({} groups), {}\n", o.agents,
             slices.size(), o.group_size, groups_of(o), fmt::join(o.protocols, "+"));
  fmt::print("  {} started ({} failed) in {:.1f} s; {} up after {:.1f} s; {} listed, {} up at the end\n",
             o.agents - start_failures, start_failures, start_s, up_after_start, up_s, seen.listed, seen.up);
  for (const auto& p : o.protocols)
    fmt::print("  {}: {} of {} pairs have a window that began in the {:.0f} s measured{}\n", p, fresh.at(p),
               expected_per_protocol, measured_s,
               missing.at(p).empty() ? "" : " (missing: " + missing.at(p) + ", ...)");
  fmt::print(
      "  windows seen {}: {} probes sent, {} lost ({} windows with loss); network RTT p50 median {:.0f} "
      "us\n",
      tally.windows, tally.sent, tally.lost, tally.windows_with_loss,
      out["network_rtt_p50_us_median"].get<double>());
  for (const auto& [name, l] : {std::pair{"/healthz", &healthz}, std::pair{"group mesh", &mesh}})
    fmt::print("  {:12s} {:5} requests ({} errors)  p50 {:7.2f} ms  p99 {:7.2f} ms  max {:7.2f} ms\n", name,
               l->ns.size(), l->errors, weft::sim::percentile_ms(l->ns, 0.5),
               weft::sim::percentile_ms(l->ns, 0.99), weft::sim::percentile_ms(l->ns, 1.0));
  fmt::print("  controller: CPU {:.1f}% of a core, RSS {} MB, {} threads, {} descriptors\n",
             out["controller_cpu_percent"].get<double>(), c1.rss_kb / 1024, ccounts.threads, ccounts.fds);
  fmt::print(
      "  agents: CPU {:.1f}% of a core ({:.3f}% each), RSS {} MB ({:.0f} KB each), {} threads, {} "
      "descriptors\n",
      out["agents_cpu_percent"].get<double>(), out["agent_cpu_percent_each"].get<double>(),
      out["agents_rss_kb"].get<int64_t>() / 1024, out["agent_rss_kb_each"].get<double>(),
      out["agent_threads"].get<size_t>(), out["agent_fds"].get<size_t>());
  fmt::print(
      "  windows made {}, delivered {}, dropped {}; report failures {}, prober restarts {}; stop {:.1f} "
      "s\n",
      out["windows_made"].get<uint64_t>(), out["windows_delivered"].get<uint64_t>(),
      out["dropped_windows"].get<uint64_t>(), out["report_failures"].get<uint64_t>(),
      out["prober_restarts"].get<uint64_t>(), out["stop_s"].get<double>());
  for (const auto& [kind, count] : seen.alarms) fmt::print("  alarm {}: {} agents\n", kind, count);
  fmt::print("  load average {:.1f} -> {:.1f}\n", load_start, weft::sim::load_average());
  if (!stop_error.empty()) fmt::print("  {}\n", stop_error);
}

int run_agents(const Options& o) {
  if (o.agents < 2 || o.group_size < 2 || o.agents / kPerSubnet >= 256 || groups_of(o) > 1000) {
    fmt::print(stderr, "bench agents: need 2 <= agents < 64,000, group size >= 2 and at most 1,000 groups\n");
    return 2;
  }
  if (o.seconds < 2 * o.window_s + 1) {
    fmt::print(stderr, "bench agents: --seconds must cover two windows\n");
    return 2;
  }
  AgentsRun run(o);
  if (auto st = run.start(); !st) {
    fmt::print(stderr, "{}\n", st.error().message);
    return 1;
  }
  run.wait_all_up();
  run.measure();
  run.await_fresh_meshes();
  run.stop_all();
  const json out = run.figures();
  if (o.json)
    fmt::print("{}\n", out.dump());
  else
    run.print(out);
  return run.ok() ? 0 : 1;
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto* sub = root.bench->add_subcommand(
      "agents",
      "One controller and N real agents on loopback addresses, probing their groups (docs/BENCHMARKS.md)");
  auto o = std::make_shared<Options>();
  sub->add_option("--agents", o->agents, "Real agents (agent::Agent, as `weft agent` runs)")
      ->capture_default_str();
  sub->add_option("--group-size", o->group_size, "Agents per group (each probes the others)")
      ->capture_default_str();
  sub->add_option("--processes", o->processes, "Processes the agents are split over (0: one per 250)")
      ->capture_default_str();
  sub->add_option("--seconds", o->seconds, "Measurement after the warm-up (at least two windows)")
      ->capture_default_str();
  sub->add_option("--warmup", o->warmup, "Seconds after all are up before measuring (< 0: two windows + 3)")
      ->capture_default_str();
  sub->add_option("--window", o->window_s, "Window length in seconds")
      ->check(CLI::Range(0.5, 60.0))
      ->capture_default_str();
  sub->add_option("--udp-interval-ms", o->udp_interval_ms, "Between two UDP probes to one target")
      ->check(CLI::Range(1.0, 60000.0))
      ->capture_default_str();
  sub->add_option("--tcp-interval-ms", o->tcp_interval_ms, "Between two TCP connect probes to one target")
      ->check(CLI::Range(1.0, 60000.0))
      ->capture_default_str();
  sub->add_option("--protocols", o->protocols, "udp, tcp or both")
      ->check(CLI::IsMember({"udp", "tcp"}))
      ->capture_default_str();
  sub->add_option("--prefix", o->prefix, "Agent i's address is PREFIX.(i / 250).(i % 250 + 1)")
      ->capture_default_str();
  sub->add_option("--port", o->port, "Loopback port for the controller")->capture_default_str();
  sub->add_option("--udp-port", o->udp_port, "Every agent's UDP responder port")->capture_default_str();
  sub->add_option("--tcp-port", o->tcp_port, "Every agent's TCP responder port")->capture_default_str();
  sub->add_option("--register-timeout", o->register_timeout, "Seconds to wait for all agents to be up")
      ->capture_default_str();
  sub->add_flag("--json", o->json, "Print one JSON object");
  sub->callback([o] { weft::cli::set_exit_code(run_agents(*o)); });
}};

}  // namespace
