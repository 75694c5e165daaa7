// `weft bench probe`: a prober (this process) and a responder (a child `weft responder`) on
// loopback, at a given total probe rate spread over N targets. Prints CPU (percent of one core to
// 0.001, from each process's CPU-time clock over the measured interval, after a one-second
// warm-up) and RSS of each process,
// the rate achieved and the probes lost. By default every target has its own loopback address
// (127.1.x.y, the responder listening on all of them), as in a real mesh where each target is
// another host: the responder then cannot pack the follow-ups of many targets into one datagram
// (it packs per prober and per address it answered from). --addresses 1 puts every target on
// 127.0.0.1, the old and flattering case.
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.hpp"
#include "base/histogram.hpp"
#include "base/proc_stats.hpp"
#include "cli/command_registry.hpp"
#include "cli/ping_report.hpp"
#include "net/address.hpp"
#include "net/socket.hpp"
#include "probe/ip/prober.hpp"
#include "proto/protocol.hpp"

extern char** environ;

namespace {

using namespace weft;

struct BenchArgs {
  std::string protocol = "udp";
  double rate = 10000;
  int targets = 100;
  int addresses = 0;  // distinct target addresses; 0 = one per target
  double duration_s = 10;
  bool json = false;
  bool keep_open = false;
  bool no_followups = false;
  int64_t coalesce_us = std::chrono::microseconds(probe::kDefaultCoalesce).count();
  int64_t max_coalesce_us = std::chrono::microseconds(probe::kDefaultMaxCoalesce).count();
  double window_s = 10;  // the prober's default: what an agent runs with
  size_t flows = 1;      // UDP flows (source ports) per target; an agent's default is 8
};

// The K-th distinct loopback address (K < 64000): 127.1.(K / 250).(K % 250 + 1), never a .0 or
// .255 host byte. Linux routes all of 127.0.0.0/8 to the loopback device.
std::string loopback_address(int k) { return fmt::format("127.1.{}.{}", k / 250, k % 250 + 1); }

// A port the kernel considers free right now on `host` (for the child responder).
Result<uint16_t> free_port(const std::string& host, bool tcp) {
  auto addr = net::SocketAddress::parse_ip(host, 0);
  auto fd = tcp ? net::tcp_listener(*addr, 1) : net::udp_socket(*addr);
  if (!fd) return std::unexpected(fd.error());
  auto local = net::local_address(fd->get());
  if (!local) return std::unexpected(local.error());
  return local->port();
}

// The responder: a child `weft responder` on free ports of `listen`, stopped with the object.
class ChildResponder {
 public:
  static Result<std::unique_ptr<ChildResponder>> start(const BenchArgs& a, const std::string& listen) {
    auto up = free_port(listen, false), tp = free_port(listen, true);
    if (!up || !tp) return fail("no free port on {}", listen);
    std::vector<std::string> args = {"weft",
                                     "--log-level",
                                     "warn",
                                     "responder",
                                     "--listen",
                                     listen,
                                     "--udp-port",
                                     std::to_string(*up),
                                     "--tcp-port",
                                     std::to_string(*tp),
                                     "--coalesce-us=" + std::to_string(a.coalesce_us),
                                     "--max-coalesce-us=" + std::to_string(a.max_coalesce_us)};
    if (a.no_followups) args.push_back("--no-followups");
    std::vector<char*> argv;
    for (auto& x : args) argv.push_back(x.data());
    argv.push_back(nullptr);
    // Our own executable by name: valgrind answers this readlink with the program it runs, whereas
    // exec of /proc/self/exe itself would start valgrind's tool binary.
    std::error_code ec;
    const std::string self_exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    const char* exe = ec ? "/proc/self/exe" : self_exe.c_str();
    pid_t child = 0;
    if (int rc = posix_spawn(&child, exe, nullptr, nullptr, argv.data(), environ); rc != 0)
      return fail("cannot start the responder: {}", std::strerror(rc));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let it bind
    return std::unique_ptr<ChildResponder>(new ChildResponder(child, *up, *tp));
  }
  ~ChildResponder() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  pid_t pid() const { return pid_; }
  uint16_t port(probe::Protocol p) const { return p == probe::Protocol::udp ? udp_port_ : tcp_port_; }

 private:
  ChildResponder(pid_t pid, uint16_t udp, uint16_t tcp) : pid_(pid), udp_port_(udp), tcp_port_(tcp) {}
  pid_t pid_;
  uint16_t udp_port_, tcp_port_;
};

probe::ProberConfig prober_config(const BenchArgs& a, proto::Protocol protocol) {
  probe::ProberConfig cfg;
  cfg.protocol = protocol;
  cfg.tcp_keep_open = a.keep_open;
  cfg.interval = std::chrono::nanoseconds(static_cast<int64_t>(1e9 * a.targets / a.rate));
  cfg.window = std::chrono::nanoseconds(static_cast<int64_t>(a.window_s * 1e9));
  cfg.flows = a.flows;
  cfg.coalesce = std::chrono::microseconds(a.coalesce_us);
  cfg.max_coalesce = std::chrono::microseconds(a.max_coalesce_us);
  return cfg;
}

// What one measured interval saw: the prober's counters and CPU, both processes' memory and the
// RTT percentiles of the probes resolved in it.
struct Measured {
  probe::ProberCounters c0, c1, end;
  int64_t t0 = 0, t1 = 0, p0 = 0, p1 = 0;
  ProcStats r0, r1, rend, self;
  LogHistogram network, delay, total;
  uint64_t windows = 0;
};

// Runs the prober: one second of warm-up, `duration_s` measured, then until every probe in flight
// has resolved (answer or timeout).
void measure(const BenchArgs& a, probe::Prober& prober, const probe::ProberConfig& cfg, pid_t child,
             Measured& m) {
  // RTT percentiles named as in `weft ping` (docs/probe.md "RTT fields"): the responder's hold
  // shows in responder_delay and rtt_incl_responder_delay only. Three histogram adds per probe, a
  // few ns against the ~15 us of CPU a probe costs here.
  std::atomic<bool> measuring{false};
  prober.set_on_probe([&](const probe::ProbeResult& r) {
    if (!r.answered || !measuring.load(std::memory_order_relaxed)) return;
    m.total.add(r.rtt_ns);
    if (r.weird) return;
    m.network.add(r.network_rtt_ns);
    if (cfg.protocol == probe::Protocol::udp || cfg.tcp_keep_open) m.delay.add(r.responder_delay_ns);
  });
  std::thread runner([&] {
    auto st = prober.run([&](probe::WindowStats&&) { ++m.windows; });
    if (!st) fmt::print(stderr, "weft bench probe: {}\n", st.error().message);
  });
  std::this_thread::sleep_for(std::chrono::seconds(1));  // warm-up: tables touched, caches warm
  m.c0 = prober.counters();
  m.t0 = mono_ns();
  m.p0 = self_cpu_ns();
  m.r0 = read_proc_stats(child);
  measuring = true;
  std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<int64_t>(a.duration_s * 1e9)));
  measuring = false;
  m.t1 = mono_ns();
  m.p1 = self_cpu_ns();
  m.r1 = read_proc_stats(child);
  m.c1 = prober.counters();
  m.self = read_proc_stats(0);
  prober.set_targets({});
  std::this_thread::sleep_for(cfg.timeout + std::chrono::milliseconds(300));
  prober.stop();
  runner.join();
  m.end = prober.counters();
  m.rend = read_proc_stats(child);
}

nlohmann::json figures(const BenchArgs& a, int addresses, const Measured& m) {
  const double secs = static_cast<double>(m.t1 - m.t0) / 1e9;
  // To 0.001 % of a core: at 1,000 probes/s the whole engine is 2-4 % of a core, and a 0.1 %
  // step was up to 5 % of the figure (issue 17).
  auto pct = [&](int64_t cpu) {
    return std::round(100'000.0 * static_cast<double>(cpu) / static_cast<double>(m.t1 - m.t0)) / 1000.0;
  };
  const auto& e = m.end;
  return {{"protocol", a.protocol},
          {"keep_open", a.keep_open},
          {"followups", !a.no_followups},
          {"coalesce_us", a.coalesce_us},
          {"max_coalesce_us", a.max_coalesce_us},
          {"rate_requested", a.rate},
          {"targets", a.targets},
          {"addresses", addresses},
          {"duration_s", a.duration_s},
          {"rate_achieved", std::round(static_cast<double>(m.c1.sent - m.c0.sent) / secs)},
          {"sent", e.sent},
          {"received", e.received},
          {"lost", e.lost},
          {"late", e.late},
          {"duplicate", e.duplicate},
          {"send_errors", e.send_errors},
          {"evicted", e.evicted},
          {"weird", e.weird},
          {"malformed", e.malformed + e.unknown_session + e.unknown_probe},
          {"windows", m.windows},
          {"window_s", a.window_s},
          {"flows", a.flows},
          {"cpu_percent_prober", pct(m.p1 - m.p0)},
          {"cpu_percent_responder", m.r0.ok && m.r1.ok ? pct(m.r1.cpu_ns - m.r0.cpu_ns) : -1.0},
          {"rss_kb_prober", m.self.rss_kb},
          {"rss_kb_responder", m.rend.rss_kb},
          {"hwm_kb_prober", m.self.hwm_kb},
          {"hwm_kb_responder", m.rend.hwm_kb},
          {"network_rtt_us", cli::summary_json(m.network)},
          {"responder_delay_us", cli::summary_json(m.delay)},
          {"rtt_incl_responder_delay_us", cli::summary_json(m.total)}};
}

int run_bench(const BenchArgs& a) {
  auto protocol = proto::parse_protocol(a.protocol);
  if (!protocol || *protocol == proto::Protocol::rdma) {  // RDMA probes: `weft rdma bench`
    fmt::print(stderr, "weft bench probe: --protocol {}: not udp or tcp\n", a.protocol);
    return 2;
  }
  if (!(a.rate > 0) || a.targets <= 0 || !(a.duration_s > 0)) {
    fmt::print(stderr, "weft bench probe: rate, targets and duration must be positive\n");
    return 2;
  }
  const int addresses = a.addresses > 0 ? std::min(a.addresses, a.targets) : a.targets;
  if (addresses > 64000) {
    fmt::print(stderr, "weft bench probe: at most 64000 distinct addresses\n");
    return 2;
  }
  // One address: the responder listens on it alone; several: on all addresses (only loopback
  // ones are ever probed), replying from the address each probe was sent to.
  auto responder = ChildResponder::start(a, addresses == 1 ? "127.0.0.1" : "0.0.0.0");
  if (!responder) {
    fmt::print(stderr, "weft bench probe: {}\n", responder.error().message);
    return 1;
  }
  const probe::ProberConfig cfg = prober_config(a, *protocol);
  auto prober = probe::Prober::create(cfg);
  if (!prober) {
    fmt::print(stderr, "weft bench probe: {}\n", prober.error().message);
    return 1;
  }
  std::vector<probe::Target> targets;
  for (int i = 0; i < a.targets; ++i)
    targets.push_back({fmt::format("t{}", i),
                       addresses == 1 ? std::string("127.0.0.1") : loopback_address(i % addresses),
                       (*responder)->port(cfg.protocol)});
  (*prober)->set_targets(std::move(targets));
  auto m = std::make_unique<Measured>();
  measure(a, **prober, cfg, (*responder)->pid(), *m);
  responder->reset();
  const nlohmann::json j = figures(a, addresses, *m);
  if (a.json) {
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print("{}\n", j.dump(2));
  }
  return 0;
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto a = std::make_shared<BenchArgs>();
  auto* sub = root.bench->add_subcommand("probe", "Prober + responder on loopback: rate, loss, CPU and RSS");
  sub->add_option("--protocol", a->protocol, "udp or tcp")
      ->capture_default_str()
      ->check(CLI::IsMember({"udp", "tcp"}));
  sub->add_option("--rate", a->rate, "Total probes per second")->capture_default_str();
  sub->add_option("--targets", a->targets, "Number of targets the rate is spread over")
      ->capture_default_str();
  sub->add_option("--addresses", a->addresses,
                  "Distinct target addresses (127.1.x.y), targets spread over them; default one per target, "
                  "1 = all on 127.0.0.1")
      ->check(CLI::Range(0, 64000));
  sub->add_option("--duration", a->duration_s, "Measured seconds (after 1 s of warm-up)")
      ->capture_default_str();
  sub->add_flag("--json", a->json, "One-line JSON");
  sub->add_flag("--keep-open", a->keep_open, "tcp: echo on kept-open connections instead of connects");
  sub->add_flag("--no-followups", a->no_followups, "Responder sends no follow-ups (see weft responder)");
  sub->add_option("--coalesce-us", a->coalesce_us,
                  "Shortest wake-up coalescing of prober and responder, under heavy load (us)")
      ->capture_default_str();
  sub->add_option("--max-coalesce-us", a->max_coalesce_us, "Wake-up coalescing below heavy load (us)")
      ->capture_default_str();
  sub->add_option("--flows", a->flows, "UDP flows (source ports) per target, 1..64 (an agent probes over 8)")
      ->capture_default_str();
  sub->add_option("--window", a->window_s, "Prober window length (s); 1 closes 10x as many windows")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  sub->callback([a] { weft::cli::set_exit_code(run_bench(*a)); });
}};

}  // namespace
