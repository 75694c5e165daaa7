// `weft ping udp|tcp HOST[:PORT]...` (and `weft ping rdma`, see cmd_ping_rdma.cpp): ping-like probing of weft
// responders (or, for tcp, any listening TCP port). A line per probe and a summary, or one JSON object per
// target with --json. Several targets are probed by one prober (as an agent does); --window S also prints
// every finished window as a JSON line, which is what the lab tests read. Exit status: 0 when at least one
// answer came back, 1 when none did, 2 for bad arguments.
#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/histogram.hpp"
#include "base/log.hpp"
#include "base/signals.hpp"
#include "cli/command_registry.hpp"
#include "cli/hw_timestamps.hpp"
#include "cli/ping_report.hpp"
#include "net/address.hpp"
#include "probe/ip/prober.hpp"
#include "probe/rtt.hpp"
#include "proto/protocol.hpp"

namespace weft::cli {
// `weft ping rdma ...` lives in cmd_ping_rdma.cpp: its own options, then its own run.
void add_ping_rdma_options(CLI::App* ping);
int run_ping_rdma(const CLI::App& ping);
}  // namespace weft::cli

namespace {

using namespace weft;
using cli::bad_args;
using cli::latency_json;
using cli::ms;
using cli::summary_json;
using cli::summary_text;
using cli::us;

struct PingArgs {
  std::string protocol;
  std::vector<std::string> targets;
  uint64_t count = 0;
  double interval_s = 1.0;
  double timeout_s = 1.0;
  double window_s = 0;
  bool json = false;
  bool keep_open = false;
  bool quiet = false;
  std::string bind;
  std::string hw_interface;  // switch this NIC's hardware timestamps on first
};

struct TargetSummary {
  std::string address;
  uint64_t resolved = 0, answered = 0, weird = 0, late = 0, duplicate = 0, malformed = 0;
  LogHistogram rtt, network, delay;
  probe::TimestampSource source = probe::TimestampSource::hardware;
  bool any_source = false;
};

probe::Prober* g_prober = nullptr;

// The prober's config from the arguments; an exit status (2: bad arguments) when they do not hold.
std::optional<int> configure(const PingArgs& a, size_t targets, probe::ProberConfig& cfg) {
  cfg.carried_followups = false;  // each probe is printed as it resolves: no hold for a later reply
  auto protocol = proto::parse_protocol(a.protocol);
  if (!protocol || *protocol == proto::Protocol::rdma)
    return bad_args(fmt::format("unknown protocol '{}' (udp or tcp)", a.protocol));
  cfg.protocol = *protocol;
  if (!(a.interval_s > 0) || a.interval_s > 3600) return bad_args("interval must be > 0 and <= 3600 seconds");
  if (!(a.timeout_s > 0) || a.timeout_s > 60) return bad_args("timeout must be > 0 and <= 60 seconds");
  if (a.window_s < 0 || a.window_s > 86400) return bad_args("window must be >= 0 and <= 86400 seconds");
  if (!a.hw_interface.empty() && !cli::enable_hw_timestamps(std::span(&a.hw_interface, 1), "ping")) return 1;
  if (a.keep_open && cfg.protocol != probe::Protocol::tcp) return bad_args("--keep-open is for tcp");
  cfg.tcp_keep_open = a.keep_open;
  cfg.bind_address = a.bind;
  cfg.interval = std::chrono::nanoseconds(static_cast<int64_t>(a.interval_s * 1e9));
  cfg.timeout = std::chrono::nanoseconds(static_cast<int64_t>(a.timeout_s * 1e9));
  // Without --window the summary comes from the probes themselves: windows are not needed, and
  // only their late/duplicate/malformed counts are read (below), so they keep no latencies.
  cfg.window = a.window_s > 0 ? std::chrono::nanoseconds(static_cast<int64_t>(a.window_s * 1e9))
                              : std::chrono::hours(24);
  cfg.window_latency = a.window_s > 0;
  cfg.count = a.count;
  if (targets == 1) cfg.batch_slack = std::chrono::nanoseconds(0);  // one target: send on time
  return std::nullopt;
}

// Each HOST[:PORT] resolved, once, on an address family this host can open a socket of.
std::optional<int> resolve_targets(const PingArgs& a, uint16_t default_port,
                                   std::vector<probe::Target>& targets,
                                   std::map<std::string, TargetSummary>& sums) {
  for (const auto& t : a.targets) {
    auto hp = net::split_host_port(t, default_port);
    if (!hp) return bad_args(hp.error().message);
    auto addr = net::resolve(hp->first, hp->second);
    if (!addr) return bad_args(addr.error().message);
    if (sums.count(t)) return bad_args(fmt::format("target '{}' given twice", t));
    if (int fd = ::socket(addr->family(), SOCK_DGRAM | SOCK_CLOEXEC, 0); fd >= 0) {
      ::close(fd);
    } else {  // the prober would skip this target and -c would never be reached
      fmt::print(stderr, "weft ping: {}: cannot open an {} socket: {}\n", t,
                 addr->family() == AF_INET6 ? "IPv6" : "IPv4", std::strerror(errno));
      return 1;
    }
    targets.push_back({t, addr->ip_string(), addr->port()});
    sums[t].address = addr->to_string();
  }
  return std::nullopt;
}

void add_to_summary(TargetSummary& s, const probe::ProbeResult& r, bool echo) {
  ++s.resolved;
  if (!r.answered) return;
  ++s.answered;
  s.rtt.add(r.rtt_ns);
  if (r.weird) {
    ++s.weird;
  } else {
    s.network.add(r.network_rtt_ns);
    if (echo) s.delay.add(r.responder_delay_ns);
  }
  s.source = s.any_source ? probe::worst(s.source, r.source) : r.source;
  s.any_source = true;
}

void print_probe_line(const probe::ProbeResult& r, bool echo, bool multi) {
  const std::string who = multi ? fmt::format("{} ", r.target) : "";
  if (!r.answered)
    fmt::print("{}seq={} timeout\n", who, r.seq);
  else if (echo)
    // network + responder = total: the responder's part includes its hold (docs/probe.md).
    fmt::print("{}seq={} network={:.3f} ms responder={:.1f} us total={:.3f} ms time={}{}\n", who, r.seq,
               ms(r.network_rtt_ns), us(r.responder_delay_ns), ms(r.rtt_ns), probe::to_string(r.source),
               r.weird ? " weird" : "");
  else
    fmt::print("{}seq={} connect={:.3f} ms time={}\n", who, r.seq, ms(r.rtt_ns), probe::to_string(r.source));
  std::fflush(stdout);
}

// One summary per target (text or JSON); returns how many probes were answered in all.
uint64_t print_summaries(const PingArgs& a, const std::vector<probe::Target>& targets,
                         std::map<std::string, TargetSummary>& sums, const probe::ProberCounters& c) {
  const bool multi = targets.size() > 1;
  uint64_t answered_all = 0;
  for (auto& t : targets) {
    const auto& s = sums[t.name];
    answered_all += s.answered;
    const uint64_t lost = s.resolved - s.answered;
    const char* src = probe::to_string(s.any_source ? s.source : probe::TimestampSource::user);
    // Late and duplicate answers are counted in windows; with one target the prober's own
    // counters also hold those that came after the last window.
    const uint64_t late = multi ? s.late : c.late;
    const uint64_t dup = multi ? s.duplicate : c.duplicate;
    if (a.json) {
      nlohmann::json j = {
          {"protocol", a.protocol},
          {"target", t.name},
          {"address", s.address},
          {"sent", s.resolved},
          {"received", s.answered},
          {"lost", lost},
          {"late", late},
          {"duplicate", dup},
          {"malformed", multi ? s.malformed : c.malformed + c.unknown_session + c.unknown_probe},
          {"weird", s.weird},
          {"timestamp_source", src},
          {"rtt_incl_responder_delay_us", summary_json(s.rtt)},
          {"network_rtt_us", summary_json(s.network)},
          {"responder_delay_us", summary_json(s.delay)}};
      if (a.window_s > 0) j["type"] = "summary";
      fmt::print("{}\n", j.dump());
    } else {
      fmt::print("--- {} {} ping statistics ---\n", t.name, a.protocol);
      fmt::print("{} sent, {} received, {:.1f}% loss, {} late, {} duplicate, timestamps: {}\n", s.resolved,
                 s.answered,
                 s.resolved ? 100.0 * static_cast<double>(lost) / static_cast<double>(s.resolved) : 0.0, late,
                 dup, src);
      fmt::print("{}{}{}", summary_text("network rtt", s.network), summary_text("responder delay", s.delay),
                 summary_text("rtt incl. responder delay", s.rtt));
    }
  }
  return answered_all;
}

int run_ping(const PingArgs& a) {
  probe::ProberConfig cfg;
  if (auto rc = configure(a, a.targets.size(), cfg)) return *rc;
  const bool echo = cfg.protocol == probe::Protocol::udp || a.keep_open;  // a responder answers
  std::vector<probe::Target> targets;
  std::map<std::string, TargetSummary> sums;
  if (auto rc = resolve_targets(a, cfg.protocol == probe::Protocol::udp ? 7777 : 7778, targets, sums))
    return *rc;
  const bool multi = targets.size() > 1;
  auto prober = probe::Prober::create(cfg);
  if (!prober) {
    fmt::print(stderr, "weft ping: {}\n", prober.error().message);
    return 1;
  }
  (*prober)->set_targets(targets);
  const bool lines = !a.json && !a.quiet;
  if (lines) {
    for (auto& t : targets)
      fmt::print("PING {} {} ({}): {}-byte probes, interval {} s, timeout {} s\n", a.protocol, t.name,
                 sums[t.name].address, echo ? 48 : 0, a.interval_s, a.timeout_s);
  }
  std::fflush(stdout);
  const uint64_t total_expected = a.count * targets.size();
  uint64_t resolved_all = 0;
  (*prober)->set_on_probe([&](const probe::ProbeResult& r) {
    ++resolved_all;
    if (auto it = sums.find(std::string(r.target)); it != sums.end()) add_to_summary(it->second, r, echo);
    if (lines) print_probe_line(r, echo, multi);
    if (a.count != 0 && resolved_all >= total_expected) g_prober->stop();
  });
  g_prober = prober->get();
  on_stop_signal([] {
    if (g_prober) g_prober->stop();
  });
  auto st = (*prober)->run([&](probe::WindowStats&& w) {
    if (auto it = sums.find(w.target); it != sums.end()) {
      it->second.late += w.late;
      it->second.duplicate += w.duplicate;
      it->second.malformed += w.malformed;
    }
    if (a.window_s <= 0) return;
    fmt::print("{}\n", cli::window_json(w).dump());
    std::fflush(stdout);
  });
  g_prober = nullptr;
  if (!st) {
    fmt::print(stderr, "weft ping: {}\n", st.error().message);
    return 1;
  }
  return print_summaries(a, targets, sums, (*prober)->counters()) > 0 ? 0 : 1;
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto a = std::make_shared<PingArgs>();
  auto* sub =
      root.app.add_subcommand("ping", "Probe responders like ping (exit 0: answered, 1: none, 2: bad args)");
  sub->add_option("protocol", a->protocol, "udp, tcp or rdma")
      ->required()
      ->check(CLI::IsMember({"udp", "tcp", "rdma"}));
  sub->add_option("target", a->targets, "HOST[:PORT]... (default port 7777 udp, 7778 tcp; [IPv6]:PORT)")
      ->required();
  // Bounded like `rdma bench --iters`: a negative count must not wrap to 2^64 - 1 (for ever), and
  // count x targets must not overflow.
  sub->add_option("-c,--count", a->count, "Stop after this many probes per target (default: until Ctrl-C)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  sub->add_option("-i,--interval", a->interval_s, "Seconds between probes to a target")
      ->capture_default_str();
  sub->add_option("--timeout", a->timeout_s, "Seconds before a probe counts as lost")->capture_default_str();
  sub->add_option("--window", a->window_s,
                  "Also print every finished window of this many seconds as a JSON line");
  sub->add_flag("--json", a->json, "Print one JSON object per target at the end instead of lines");
  sub->add_flag("-q,--quiet", a->quiet, "No per-probe lines");
  sub->add_flag("--keep-open", a->keep_open, "tcp: request/echo RTT on one kept-open connection");
  sub->add_option("--bind", a->bind, "Source address to probe from");
  sub->add_option(
      "--hw-timestamps", a->hw_interface,
      "udp/tcp: switch this interface's NIC hardware timestamps on first (root; left alone if already on)");
  weft::cli::add_ping_rdma_options(sub);
  sub->callback([a, sub] {
    weft::cli::set_exit_code(a->protocol == "rdma" ? weft::cli::run_ping_rdma(*sub) : run_ping(*a));
  });
}};

}  // namespace
