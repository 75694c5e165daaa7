// `weft ping rdma DEVICE:TARGET...` (the rdma mode of `weft ping`, hooked in from cmd_ping.cpp);
// its counterpart `weft rdma responder` is cmd_rdma_responder.cpp. See docs/rdma-probes.md.
//
// A target's QPN and qkey come from --qpn/--qkey, or else from the responder's discovery answer
// over UDP (port 7779 by default) at the target host (or at the IPv4 address inside its GID).
// Exit status: 0 when at least one answer came back, 1 when none did (or no RDMA device, or the
// engine failed), 2 for bad arguments.
#include <arpa/inet.h>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/histogram.hpp"
#include "base/signals.hpp"
#include "cli/command_registry.hpp"
#include "cli/ping_report.hpp"
#include "cli/rdma_args.hpp"
#include "cli/rdma_probe_options.hpp"
#include "net/address.hpp"
#include "probe/rdma/discovery.hpp"
#include "probe/rdma/engine.hpp"
#include "probe/rdma/target_spec.hpp"

namespace weft::cli {

void add_ping_rdma_options(CLI::App* ping);
int run_ping_rdma(const CLI::App& ping);

}  // namespace weft::cli

namespace {

using namespace weft;
using cli::add_rdma_options;
using cli::bad_args;
using cli::engine_config;
using cli::latency_json;
using cli::ms;
using cli::RdmaOpts;
using cli::summary_json;
using cli::summary_text;
using cli::us;

RdmaOpts g_ping_opts;
probe::RdmaEngine* g_engine = nullptr;

// Options of `weft ping` shared by every mode, read from the parsed subcommand.
template <typename T>
std::optional<T> opt(const CLI::App& app, const std::string& name) {
  const CLI::Option* o = app.get_option_no_throw(name);
  if (!o || o->count() == 0) return std::nullopt;
  return o->as<T>();
}
bool flag(const CLI::App& app, const std::string& name) {
  const CLI::Option* o = app.get_option_no_throw(name);
  return o && o->count() > 0;
}

struct Summary {
  std::string address;
  uint64_t resolved = 0, answered = 0, weird = 0;
  LogHistogram rtt, network, delay;
};

// Turns one parsed target into an engine target (asking the responder's discovery if needed).
Result<probe::RdmaTarget> resolve_target(const std::string& text, const probe::RdmaTargetSpec& s,
                                         const probe::RdmaAddress& local, const RdmaOpts& o) {
  probe::RdmaTarget t;
  t.name = text;
  t.qkey = o.qkey.value_or(probe::kDefaultRdmaQkey);
  std::optional<std::string> ask;  // where to ask by discovery
  switch (s.kind) {
    case probe::RdmaTargetSpec::Kind::lid:
      if (!o.qpn) return fail("{}: a LID target needs --qpn", text);
      t.global = false;
      t.lid = s.lid;
      t.qpn = *o.qpn;
      return t;
    case probe::RdmaTargetSpec::Kind::gid: {
      t.gid = s.gid;
      if (o.qpn) {
        t.qpn = *o.qpn;
        return t;
      }
      in_addr a{};
      if (std::memcmp(s.gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) != 0)
        return fail("{}: give --qpn (discovery needs an IPv4-mapped GID or a host)", text);
      std::memcpy(&a.s_addr, s.gid.raw + 12, 4);
      char buf[INET_ADDRSTRLEN];
      ask = inet_ntop(AF_INET, &a, buf, sizeof buf);
      break;
    }
    case probe::RdmaTargetSpec::Kind::host: {
      if (o.qpn) {
        auto addr = net::resolve(s.host, 0);
        if (!addr) return std::unexpected(addr.error());
        if (addr->family() != AF_INET)
          return fail("{}: a host with --qpn must have an IPv4 address (RoCE v2 GID)", text);
        in_addr a{};
        inet_pton(AF_INET, addr->ip_string().c_str(), &a);
        std::memcpy(t.gid.raw + 10, "\xff\xff", 2);
        std::memcpy(t.gid.raw + 12, &a.s_addr, 4);
        t.qpn = *o.qpn;
        return t;
      }
      ask = s.host;
      break;
    }
  }
  auto peer = probe::rdma_discovery::query(*ask, o.discovery_port, std::chrono::milliseconds(2000));
  if (!peer) return fail("{}: {}", text, peer.error().message);
  t.qpn = peer->qpn;
  if (!o.qkey) t.qkey = peer->qkey;
  if (s.kind == probe::RdmaTargetSpec::Kind::host) {
    // On InfiniBand within the subnet, LID routing; otherwise the peer's GID.
    if (!local.ethernet && !peer->ethernet && peer->lid != 0) {
      t.global = false;
      t.lid = peer->lid;
    } else {
      t.gid = peer->gid;
    }
  }
  return t;
}

}  // namespace

namespace weft::cli {

void add_ping_rdma_options(CLI::App* ping) { add_rdma_options(ping, g_ping_opts, true); }

namespace {

// The targets as given (HOST, DEVICE:HOST, GID, LID), checked before any verbs: targets that cannot
// be reached without a QPN, and targets on different local devices, are usage errors.
std::optional<int> parse_specs(const RdmaOpts& o, const std::vector<std::string>& targets,
                               std::vector<probe::RdmaTargetSpec>& specs) {
  for (auto& t : targets) {
    // The device is -d/--device; the older DEVICE:TARGET spelling still works. A target without
    // a device prefix goes to -d's device, or to the first one ("any").
    const std::string dev = o.device.empty() ? "any" : o.device;
    auto s = probe::parse_rdma_target(t);
    if (!s || (!o.device.empty() && !t.starts_with(o.device + ":"))) {
      auto with_dev = probe::parse_rdma_target(dev + ":" + t);
      if (with_dev) s = with_dev;
    }
    if (!s) return bad_args(s.error().message);
    if (!o.qpn && s->kind == probe::RdmaTargetSpec::Kind::lid)
      return bad_args(fmt::format("{}: a LID target needs --qpn", t));
    if (!o.qpn && s->kind == probe::RdmaTargetSpec::Kind::gid &&
        std::memcmp(s->gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) != 0)
      return bad_args(fmt::format("{}: give --qpn (discovery needs an IPv4-mapped GID or a host)", t));
    if (!specs.empty() && s->device != specs[0].device)
      return bad_args(
          fmt::format("all targets must use one local device ({} and {})", specs[0].device, s->device));
    specs.push_back(*s);
  }
  return std::nullopt;
}

std::string address_text(const probe::RdmaTarget& t) {
  if (!t.global) return fmt::format("lid {} qpn {}", t.lid, t.qpn);
  char b[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, t.gid.raw, b, sizeof b);
  return fmt::format("gid {} qpn {}", b, t.qpn);
}

void add_result(Summary& s, const probe::RdmaProbeResult& r) {
  ++s.resolved;
  if (!r.answered) return;
  ++s.answered;
  s.rtt.add(r.sample.total_ns);
  if (r.sample.weird) ++s.weird;
  if (r.sample.has_network) s.network.add(r.sample.network_ns);
  if (r.sample.has_responder_delay) s.delay.add(r.sample.responder_delay_ns);
}

void print_result(const probe::RdmaProbeResult& r, const std::string& prefix) {
  if (r.answered)
    fmt::print("{}seq={} network={} responder={} total={:.3f} ms time={}{}\n", prefix, r.seq,
               r.sample.has_network ? fmt::format("{:.3f} ms", ms(r.sample.network_ns)) : "-",
               r.sample.has_responder_delay ? fmt::format("{:.1f} us", us(r.sample.responder_delay_ns)) : "-",
               ms(r.sample.total_ns), probe::to_string(r.sample.source), r.sample.weird ? " weird" : "");
  else
    fmt::print("{}seq={} timeout\n", prefix, r.seq);
}

// One summary per target (text or JSON); returns how many probes were answered in all.
uint64_t print_summaries(const std::vector<probe::RdmaTarget>& list,
                         std::map<std::string, Summary, std::less<>>& sums, probe::RdmaEngine& e, bool json) {
  const auto c = e.counters();
  const char* src = probe::to_string(e.timestamp_source());
  const std::string local = e.address().to_string();
  uint64_t answered = 0;
  for (auto& t : list) {
    const Summary& s = sums[t.name];
    answered += s.answered;
    const uint64_t lost = s.resolved - s.answered;
    if (json) {
      nlohmann::json j = {{"protocol", "rdma"},
                          {"target", t.name},
                          {"address", s.address},
                          {"local", local},
                          {"sent", s.resolved},
                          {"received", s.answered},
                          {"lost", lost},
                          {"weird", s.weird},
                          {"late", c.late},
                          {"duplicate", c.duplicate},
                          {"malformed", c.garbage + c.unknown_session + c.unknown_probe},
                          {"timestamp_source", src},
                          {"timestamp_note", e.timestamp_note()},
                          {"rtt_incl_responder_delay_us", summary_json(s.rtt)},
                          {"network_rtt_us", summary_json(s.network)},
                          {"responder_delay_us", summary_json(s.delay)}};
      fmt::print("{}\n", j.dump());
    } else {
      fmt::print("--- {} rdma ping statistics ---\n", t.name);
      fmt::print("{} sent, {} received, {:.1f}% loss, {} weird, timestamps: {}{}\n", s.resolved, s.answered,
                 s.resolved ? 100.0 * static_cast<double>(lost) / static_cast<double>(s.resolved) : 0.0,
                 s.weird, src, e.timestamp_note().empty() ? "" : " (" + e.timestamp_note() + ")");
      fmt::print("{}{}{}", summary_text("network rtt", s.network), summary_text("responder delay", s.delay),
                 summary_text("rtt incl. responder delay", s.rtt));
    }
  }
  return answered;
}

}  // namespace

int run_ping_rdma(const CLI::App& ping) {
  const RdmaOpts& o = g_ping_opts;
  auto targets = ping.get_option("target")->results();
  const uint64_t count = opt<uint64_t>(ping, "--count").value_or(0);
  const double interval_s = opt<double>(ping, "--interval").value_or(1.0);
  const double timeout_s = opt<double>(ping, "--timeout").value_or(1.0);
  const double window_s = opt<double>(ping, "--window").value_or(0);
  const bool json = flag(ping, "--json"), quiet = flag(ping, "--quiet");
  const std::string bind = opt<std::string>(ping, "--bind").value_or("");
  if (flag(ping, "--keep-open")) return bad_args("--keep-open is for tcp");
  if (!(interval_s > 0) || interval_s > 3600) return bad_args("interval must be > 0 and <= 3600 seconds");
  if (!(timeout_s > 0) || timeout_s > 60) return bad_args("timeout must be > 0 and <= 60 seconds");
  if (window_s < 0 || window_s > 86400) return bad_args("--window must be 0-86400 seconds");
  std::vector<probe::RdmaTargetSpec> specs;
  if (auto rc = parse_specs(o, targets, specs)) return *rc;
  auto cfg = engine_config(o, specs[0].device == "any" ? "" : specs[0].device, bind);
  if (!cfg) return bad_args(cfg.error().message);
  cfg->interval = std::chrono::nanoseconds(static_cast<int64_t>(interval_s * 1e9));
  cfg->timeout = std::chrono::nanoseconds(static_cast<int64_t>(timeout_s * 1e9));
  cfg->window = window_s > 0 ? std::chrono::nanoseconds(static_cast<int64_t>(window_s * 1e9))
                             : std::chrono::nanoseconds(std::chrono::hours(24));
  cfg->count = count;
  cfg->recv_depth = 2048;  // a ping process receives little; the agent's engine keeps the default
  cfg->send_depth = 512;
  auto engine = probe::RdmaEngine::create(*cfg);
  if (!engine) {
    fmt::print(stderr, "weft ping: {}\n", engine.error().message);
    return 1;
  }
  const probe::RdmaAddress& local = (*engine)->address();
  std::vector<probe::RdmaTarget> list;
  std::map<std::string, Summary, std::less<>> sums;
  for (size_t i = 0; i < specs.size(); ++i) {
    auto t = resolve_target(targets[i], specs[i], local, o);
    if (!t) {
      fmt::print(stderr, "weft ping: {}\n", t.error().message);
      return 1;
    }
    sums[t->name].address = address_text(*t);
    list.push_back(*t);
  }
  uint64_t total = count * list.size();
  size_t skipped = 0;
  if (!json)
    for (auto& t : list)
      fmt::print("PING rdma {} ({}) from {}: 64-byte UD probes, interval {} s, timeout {} s\n", t.name,
                 sums[t.name].address, local.to_string(), interval_s, timeout_s);
  std::fflush(stdout);
  uint64_t resolved = 0;
  probe::RdmaEngine* e = engine->get();
  e->set_on_probe([&](const probe::RdmaProbeResult& r) {
    add_result(sums.find(r.target)->second, r);
    ++resolved;
    // With several targets each line says which one it is about.
    if (!json && !quiet) print_result(r, list.size() > 1 ? fmt::format("{}: ", r.target) : std::string());
    std::fflush(stdout);
    if (total != 0 && resolved >= total) g_engine->stop();
  });
  // A target whose address handle cannot be made gets no probes: say why, and do not wait for
  // its -c probes (the run would never end otherwise).
  e->set_on_target_skipped([&](const probe::RdmaTarget& t, const std::string& why) {
    fmt::print(stderr, "weft ping: {}: cannot probe: {}\n", t.name, why);
    ++skipped;
    total = total >= count ? total - count : 0;
    if (skipped == list.size() || (count != 0 && resolved >= total)) g_engine->stop();
  });
  e->set_targets(list);
  g_engine = e;
  on_stop_signal([] {
    if (g_engine) g_engine->stop();
  });
  auto st = e->run([&](probe::WindowStats&& w) {
    if (window_s <= 0) return;
    fmt::print("{}\n", cli::window_json(w).dump());
    std::fflush(stdout);
  });
  g_engine = nullptr;
  if (!st) {
    fmt::print(stderr, "weft ping: {}\n", st.error().message);
    return 1;
  }
  return print_summaries(list, sums, *e, json) > 0 ? 0 : 1;
}

}  // namespace weft::cli
