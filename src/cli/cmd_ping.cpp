// `weft ping udp|tcp HOST[:PORT]`: ping-like probing of one weft responder (or, for tcp, any
// listening TCP port). A line per probe and a summary, or one JSON object with --json.
// Exit status: 0 when at least one answer came back, 1 when none did, 2 for bad arguments.
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/histogram.hpp"
#include "base/log.hpp"
#include "base/signals.hpp"
#include "cli/command_registry.hpp"
#include "net/address.hpp"
#include "probe/prober.hpp"
#include "probe/rtt.hpp"

namespace {

using namespace weft;

struct PingArgs {
  std::string protocol;
  std::string target;
  uint64_t count = 0;
  double interval_s = 1.0;
  double timeout_s = 1.0;
  bool json = false;
  bool keep_open = false;
  std::string bind;
};

probe::Prober* g_prober = nullptr;

double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }
double us(int64_t ns) { return std::round(static_cast<double>(ns) / 10.0) / 100.0; }

nlohmann::json summary_json(const LogHistogram& h) {
  return {{"count", h.count()},
          {"min", us(h.min())},
          {"mean", us(h.mean())},
          {"p50", us(h.percentile(0.50))},
          {"p90", us(h.percentile(0.90))},
          {"p99", us(h.percentile(0.99))},
          {"max", us(h.max())}};
}

std::string summary_text(const char* what, const LogHistogram& h) {
  if (h.count() == 0) return "";
  return fmt::format("{} min/p50/p99/max = {:.3f}/{:.3f}/{:.3f}/{:.3f} ms\n", what, ms(h.min()), ms(h.percentile(0.5)),
                     ms(h.percentile(0.99)), ms(h.max()));
}

int bad_args(const std::string& msg) {
  fmt::print(stderr, "weft ping: {}\n", msg);
  return 2;
}

int run_ping(const PingArgs& a) {
  probe::ProberConfig cfg;
  if (a.protocol == "udp") cfg.protocol = probe::Protocol::udp;
  else if (a.protocol == "tcp") cfg.protocol = probe::Protocol::tcp;
  else return bad_args(fmt::format("unknown protocol '{}' (udp or tcp)", a.protocol));
  if (!(a.interval_s > 0) || a.interval_s > 3600) return bad_args("interval must be > 0 and <= 3600 seconds");
  if (!(a.timeout_s > 0) || a.timeout_s > 60) return bad_args("timeout must be > 0 and <= 60 seconds");
  if (a.keep_open && cfg.protocol != probe::Protocol::tcp) return bad_args("--keep-open is for tcp");
  const uint16_t default_port = cfg.protocol == probe::Protocol::udp ? 7777 : 7778;
  auto hp = net::split_host_port(a.target, default_port);
  if (!hp) return bad_args(hp.error().message);
  auto addr = net::resolve(hp->first, hp->second);
  if (!addr) return bad_args(addr.error().message);

  cfg.tcp_keep_open = a.keep_open;
  cfg.bind_address = a.bind;
  cfg.interval = std::chrono::nanoseconds(static_cast<int64_t>(a.interval_s * 1e9));
  cfg.timeout = std::chrono::nanoseconds(static_cast<int64_t>(a.timeout_s * 1e9));
  cfg.window = std::chrono::hours(24);  // the summary is computed here from every probe
  cfg.count = a.count;
  cfg.batch_slack = std::chrono::nanoseconds(0);
  auto prober = probe::Prober::create(cfg);
  if (!prober) {
    fmt::print(stderr, "weft ping: {}\n", prober.error().message);
    return 1;
  }
  const std::string name = a.target;
  (*prober)->set_targets({{name, addr->ip_string(), addr->port()}});

  LogHistogram rtt, network, delay;
  uint64_t resolved = 0, answered = 0, weird = 0;
  probe::TimestampSource source = probe::TimestampSource::hardware;
  bool any_source = false;
  if (!a.json)
    fmt::print("PING {} {} ({}): {}-byte probes, interval {} s, timeout {} s\n", a.protocol, name, addr->to_string(),
               cfg.protocol == probe::Protocol::udp || a.keep_open ? 48 : 0, a.interval_s, a.timeout_s);
  std::fflush(stdout);
  (*prober)->set_on_probe([&](const probe::ProbeResult& r) {
    ++resolved;
    if (r.answered) {
      ++answered;
      rtt.add(r.rtt_ns);
      if (r.weird) ++weird;
      else {
        network.add(r.network_rtt_ns);
        if (cfg.protocol == probe::Protocol::udp || a.keep_open) delay.add(r.responder_delay_ns);
      }
      source = any_source ? probe::worst(source, r.source) : r.source;
      any_source = true;
      if (!a.json) {
        if (cfg.protocol == probe::Protocol::udp || a.keep_open)
          fmt::print("seq={} rtt={:.3f} ms network={:.3f} ms responder={:.1f} us time={}{}\n", r.seq, ms(r.rtt_ns),
                     ms(r.network_rtt_ns), us(r.responder_delay_ns), probe::to_string(r.source), r.weird ? " weird" : "");
        else
          fmt::print("seq={} connect={:.3f} ms time={}\n", r.seq, ms(r.rtt_ns), probe::to_string(r.source));
      }
    } else if (!a.json) {
      fmt::print("seq={} timeout\n", r.seq);
    }
    std::fflush(stdout);
    if (a.count != 0 && resolved >= a.count) g_prober->stop();
  });
  g_prober = prober->get();
  on_stop_signal([] {
    if (g_prober) g_prober->stop();
  });
  auto st = (*prober)->run([](probe::WindowStats&&) {});
  g_prober = nullptr;
  if (!st) {
    fmt::print(stderr, "weft ping: {}\n", st.error().message);
    return 1;
  }
  const auto c = (*prober)->counters();
  const uint64_t lost = resolved - answered;
  const char* src = probe::to_string(any_source ? source : probe::TimestampSource::user);
  if (a.json) {
    nlohmann::json j = {{"protocol", a.protocol},
                        {"target", name},
                        {"address", addr->to_string()},
                        {"sent", resolved},
                        {"received", answered},
                        {"lost", lost},
                        {"late", c.late},
                        {"duplicate", c.duplicate},
                        {"malformed", c.malformed + c.unknown_session + c.unknown_probe},
                        {"weird", weird},
                        {"timestamp_source", src},
                        {"rtt_us", summary_json(rtt)},
                        {"network_rtt_us", summary_json(network)},
                        {"responder_delay_us", summary_json(delay)}};
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print("--- {} {} ping statistics ---\n", name, a.protocol);
    fmt::print("{} sent, {} received, {:.1f}% loss, {} late, {} duplicate, timestamps: {}\n", resolved, answered,
               resolved ? 100.0 * static_cast<double>(lost) / static_cast<double>(resolved) : 0.0, c.late, c.duplicate,
               src);
    fmt::print("{}{}{}", summary_text("rtt", rtt), summary_text("network rtt", network),
               summary_text("responder delay", delay));
  }
  return answered > 0 ? 0 : 1;
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto a = std::make_shared<PingArgs>();
  auto* sub = root.app.add_subcommand("ping", "Probe one responder like ping (exit 0: answered, 1: none, 2: bad args)");
  sub->add_option("protocol", a->protocol, "udp or tcp")->required()->check(CLI::IsMember({"udp", "tcp"}));
  sub->add_option("target", a->target, "HOST[:PORT] (default port 7777 udp, 7778 tcp; [IPv6]:PORT)")->required();
  sub->add_option("-c,--count", a->count, "Stop after this many probes (default: until Ctrl-C)");
  sub->add_option("-i,--interval", a->interval_s, "Seconds between probes")->capture_default_str();
  sub->add_option("--timeout", a->timeout_s, "Seconds before a probe counts as lost")->capture_default_str();
  sub->add_flag("--json", a->json, "Print one JSON object at the end instead of lines");
  sub->add_flag("--keep-open", a->keep_open, "tcp: request/echo RTT on one kept-open connection");
  sub->add_option("--bind", a->bind, "Source address to probe from");
  sub->callback([a] { weft::cli::set_exit_code(run_ping(*a)); });
}};

}  // namespace
