// `weft msg bench --server | --client HOST`: message connections (src/msg) measured the way
// perftest measures verbs, or checked byte for byte.
//   --mode latency    ping-pong; one-way latency = RTT/2 (as ib_send_lat / ib_write_lat report)
//   --mode bandwidth  the client streams --iters messages, the server answers once at the end
//   --mode check      the client sends --iters messages of random sizes (msg/test_pattern.hpp),
//                     the server compares every byte; a peer that dies ends it with an error
// For each type and size the client first sends the plan over the side channel; the server
// answers "ok" or why not, so a mismatch is an error message, not a timeout. The client prints
// one line per run (perftest-like text, or JSON with --json) with both ends' work requests and
// CPU time per message.
#include "cli/cmd_msg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.hpp"
#include "base/proc_stats.hpp"
#include "base/random.hpp"
#include "cli/command_registry.hpp"
#include "cli/rdma_args.hpp"
#include "msg/connection.hpp"
#include "msg/test_pattern.hpp"
#include "rdma/device.hpp"

namespace {

using namespace weft;
using namespace weft::msg;
using namespace weft::msg_bench;
using std::chrono::milliseconds;

std::string report_text(const PeerReport& r) {
  return fmt::format(
      "cpu_ns={} send_wrs={} recv_wrs={} reads={} atomics={} acks={} msgs_received={} srq_low={} verified={} "
      "error={}",
      r.cpu_ns, r.stats.send_wrs, r.stats.recv_wrs, r.stats.reads, r.stats.atomics, r.stats.acks,
      r.stats.msgs_received, r.stats.srq_low, r.verified, r.error);
}

PeerReport parse_report(std::string_view s) {
  PeerReport r;
  auto get = [&](std::string_view key) -> std::string_view {
    auto at = s.find(std::string(key) + "=");
    if (at == std::string_view::npos) return {};
    auto v = s.substr(at + key.size() + 1);
    if (key == "error") return v;
    return v.substr(0, v.find(' '));
  };
  auto num = [&](std::string_view key) {
    uint64_t v = 0;
    auto t = get(key);
    std::from_chars(t.data(), t.data() + t.size(), v);
    return v;
  };
  r.cpu_ns = static_cast<int64_t>(num("cpu_ns"));
  r.stats.send_wrs = num("send_wrs");
  r.stats.recv_wrs = num("recv_wrs");
  r.stats.reads = num("reads");
  r.stats.atomics = num("atomics");
  r.stats.acks = num("acks");
  r.stats.msgs_received = num("msgs_received");
  r.stats.srq_low = num("srq_low");
  r.verified = num("verified");
  r.error = std::string(get("error"));
  return r;
}

// ---- server ----

Status serve_one(rdma::SideChannel ch, rdma::SideChannel& listener, const BenchOptions& o) {
  const milliseconds t(o.timeout_ms);
  auto plan_bytes = ch.exchange_record({}, 4096, t);
  if (!plan_bytes) return std::unexpected(plan_bytes.error());
  const std::string plan_text = to_string_bytes(*plan_bytes);
  if (plan_text == "quit") return fail("quit");
  auto plan = Plan::decode(plan_text);
  auto mo = plan ? connection_options(o, *plan) : Result<msg::Options>(std::unexpected(plan.error()));
  const std::string answer = mo ? "ok" : mo.error().message;
  if (auto a = ch.exchange_record(to_bytes(answer), 0, t); !a) return std::unexpected(a.error());
  if (!mo) return std::unexpected(mo.error());
  if (plan->kind == Kind::shared_ring) return serve_shared(std::move(ch), *plan, listener, o);
  // The side channel goes to the connection; a second one carries the report (below).
  auto conn = open_connection(std::move(ch), *mo);
  if (!conn) return std::unexpected(conn.error());
  Connection& c = **conn;
  const int64_t cpu0 = self_cpu_ns();  // the runs, not the set-up (registration is not per message)
  PeerReport rep;
  Status run{};
  const uint64_t total = plan->iters + (plan->mode == "latency" ? plan->warmup : 0);
  for (uint64_t i = 0; i < total && run; ++i) {
    auto m = c.receive(t);
    if (!m) {
      run = std::unexpected(m.error());
      break;
    }
    if (plan->mode == "latency") {
      run = c.send(*m, t);
    } else if (plan->mode == "check") {
      const uint32_t want = pattern_length(plan->seed, i, plan->max_message);
      if (m->size() != want) {
        run = fail("message {}: {} bytes, expected {}", i, m->size(), want);
      } else if (size_t at = pattern_mismatch(plan->seed, i, *m); at != SIZE_MAX) {
        run = fail("message {}: byte {} differs", i, at);
      } else {
        ++rep.verified;
      }
    }
  }
  if (run && plan->mode != "latency") {
    std::byte done[8]{};
    run = c.send(done, t);
  }
  if (run) run = c.flush(t);
  rep.stats = c.stats();
  rep.cpu_ns = self_cpu_ns() - cpu0;
  if (!run) rep.error = run.error().message;
  if (plan->mode == "check")
    fmt::print("{{\"type\":\"{}\",\"mode\":\"check\",\"verified\":{},\"of\":{},\"error\":\"{}\"}}\n",
               to_string(plan->kind), rep.verified, plan->iters, rep.error);
  // The report goes back through the connection itself as a last message when it is alive.
  if (run) {
    auto text = report_text(rep);
    if (auto s = c.send(to_bytes(text.substr(0, std::min<size_t>(text.size(), plan->max_message))), t); !s)
      return s;
    if (auto s = c.flush(t); !s) return s;
    // Wait for the client to take it (it answers with an empty message) before tearing down.
    (void)c.receive(t);
  }
  std::fflush(stdout);
  return run;
}

Status serve(const BenchOptions& o) {
  // The device first: a host without one (or a misspelt --device) fails now, not when a client
  // arrives and sees its side channel close.
  auto dev = rdma::Device::open(o.device);
  if (!dev) return std::unexpected(dev.error());
  auto l = rdma::SideChannel::listen(o.bind, o.port);
  if (!l) return fail("side channel: listen on {}:{}: {}", o.bind, o.port, l.error().message);
  fmt::print(stderr, "weft msg bench: listening on {}:{} (device {})\n", o.bind, o.port, dev->name());
  std::fflush(stderr);
  bool served = false;
  for (;;) {
    auto ch = l->accept(milliseconds(o.timeout_ms));
    if (!ch)
      return fail("no {}client connected within {} ms (--timeout-ms): {}", served ? "further " : "",
                  o.timeout_ms, ch.error().message);
    served = true;
    auto s = serve_one(std::move(*ch), *l, o);
    if (!s && s.error().message == "quit") return {};
    if (!s) {
      fmt::print(stderr, "weft msg bench (server): {}\n", s.error().message);
      if (o.mode == "check") return s;  // a check run is one run: its failure is the result
    }
  }
}

// ---- client ----

struct LatencySummary {
  double min = 0, max = 0, median = 0, avg = 0, stdev = 0, p99 = 0, p999 = 0;
};

LatencySummary summarize(std::vector<double>& us) {
  LatencySummary s;
  if (us.empty()) return s;
  std::sort(us.begin(), us.end());
  auto pct = [&](double q) {
    return us[std::min(us.size() - 1, static_cast<size_t>(std::ceil(q * us.size())) - 1)];
  };
  s.min = us.front();
  s.max = us.back();
  s.median = pct(0.5);
  s.p99 = pct(0.99);
  s.p999 = pct(0.999);
  double sum = 0;
  for (double v : us) sum += v;
  s.avg = sum / us.size();
  double var = 0;
  for (double v : us) var += (v - s.avg) * (v - s.avg);
  s.stdev = std::sqrt(var / us.size());
  return s;
}

// What one run measured at the client: latency samples (us, one way) or the stream's span.
struct Measured {
  std::vector<double> samples;
  int64_t t0 = 0, t1 = 0;
};

// Ping-pong: --warmup + --iters round trips of plan.size bytes; RTT/2 per sample.
Result<Measured> ping_pong(Connection& c, const Plan& plan, std::span<std::byte> buf, milliseconds t) {
  Measured r;
  r.samples.reserve(plan.iters);
  for (uint64_t i = 0; i < plan.warmup + plan.iters; ++i) {
    const int64_t a = mono_ns();
    if (auto s = c.send(buf.first(plan.size), t); !s) return std::unexpected(s.error());
    auto m = c.receive(t);
    if (!m) return std::unexpected(m.error());
    const int64_t b = mono_ns();
    if (m->size() != plan.size) return fail("echo {}: {} bytes, sent {}", i, m->size(), plan.size);
    if (i == plan.warmup) r.t0 = a;
    if (i >= plan.warmup) r.samples.push_back(static_cast<double>(b - a) / 2000.0);
    r.t1 = b;
  }
  return r;
}

// Bandwidth and check: --iters messages one way (check: random sizes of the test pattern), then
// the server's one answer.
Result<Measured> stream(Connection& c, const Plan& plan, std::span<std::byte> buf, milliseconds t) {
  Measured r;
  r.t0 = mono_ns();
  for (uint64_t i = 0; i < plan.iters; ++i) {
    std::span<std::byte> m = buf.first(plan.size);
    if (plan.mode == "check") {
      m = buf.first(pattern_length(plan.seed, i, plan.max_message));
      pattern_fill(plan.seed, i, m);
    }
    if (auto s = c.send(m, t); !s) return in_context(s.error(), fmt::format("message {}", i));
  }
  auto done = c.receive(t);
  if (!done) return std::unexpected(done.error());
  r.t1 = mono_ns();
  return r;
}

// The server's report (its last message), acknowledged with an empty one so it may tear down.
Result<PeerReport> take_report(Connection& c, milliseconds t) {
  auto rep_msg = c.receive(t);
  if (!rep_msg) return std::unexpected(rep_msg.error());
  PeerReport peer =
      parse_report(std::string_view(reinterpret_cast<const char*>(rep_msg->data()), rep_msg->size()));
  std::byte bye[1]{};
  (void)c.send(std::span(bye, 0), t);
  (void)c.flush(t);
  if (!peer.error.empty()) return fail("server: {}", peer.error);
  return peer;
}

// One run's line: perftest-like text or JSON, both ends' work requests and CPU per message.
Status print_run(const BenchOptions& o, const Plan& plan, Measured& r, const Stats& mine, int64_t cpu,
                 const PeerReport& peer) {
  const double n = static_cast<double>(plan.iters);
  const double secs = static_cast<double>(r.t1 - r.t0) / 1e9;
  const uint64_t bytes = plan.mode == "check" ? mine.bytes_sent : plan.iters * plan.size;
  const double gbps = secs > 0 ? static_cast<double>(bytes) * 8 / secs / 1e9 : 0;
  const double mpps = secs > 0 ? n / secs / 1e6 : 0;
  // Work requests and CPU per message, both ends (the report exchange itself is left out).
  const double msgs = plan.mode == "latency" ? 2 * (n + static_cast<double>(plan.warmup)) : n;
  const double wrs_client = static_cast<double>(mine.send_wrs + mine.recv_wrs);
  const double wrs_server = static_cast<double>(peer.stats.send_wrs + peer.stats.recv_wrs);
  const double wr_per_msg = (wrs_client + wrs_server) / msgs;
  const double cpu_per_msg_ns = static_cast<double>(cpu + peer.cpu_ns) / msgs;
  auto lat = summarize(r.samples);  // sorts the samples
  if (!o.cdf.empty() && !r.samples.empty()) {
    std::FILE* f = std::fopen(o.cdf.c_str(), "a");
    if (!f) return fail_errno(fmt::format("open {}", o.cdf), errno);
    for (double v : r.samples)
      fmt::print(f, "{} {} {} {:.3f}\n", to_string(plan.kind), plan.wait, plan.size, v);
    std::fclose(f);
  }
  if (o.json) {
    fmt::print(
        "{{\"type\":\"{}\",\"mode\":\"{}\",\"wait\":\"{}\",\"bytes\":{},\"iterations\":{},\"t_min\":{:.2f},"
        "\"t_max\":{:.2f},"
        "\"t_typical\":{:.2f},\"t_avg\":{:.2f},\"t_stdev\":{:.2f},\"percentile_99\":{:.2f},\"percentile_99."
        "9\":{:.2f},"
        "\"bw_gbps\":{:.4f},\"msg_rate_mpps\":{:.6f},\"wr_per_msg\":{:.3f},\"reads_per_msg\":{:.3f},"
        "\"atomics_per_msg\":{:.3f},\"acks_per_msg\":{:.3f},\"cpu_ns_per_msg\":{:.0f},\"credit_waits\":{},"
        "\"srq_low\":{}}}"
        "\n",
        to_string(plan.kind), plan.mode, plan.wait, plan.size, plan.iters, lat.min, lat.max, lat.median,
        lat.avg, lat.stdev, lat.p99, lat.p999, gbps, mpps, wr_per_msg,
        static_cast<double>(mine.reads + peer.stats.reads) / msgs,
        static_cast<double>(mine.atomics + peer.stats.atomics) / msgs,
        static_cast<double>(mine.acks + peer.stats.acks) / msgs, cpu_per_msg_ns, mine.credit_waits,
        mine.srq_low + peer.stats.srq_low);
  } else if (plan.mode == "latency") {
    fmt::print(
        "{:<14} {:>8} {:>10} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>7.2f} "
        "{:>9.0f}\n",
        to_string(plan.kind), plan.size, plan.iters, lat.min, lat.max, lat.median, lat.avg, lat.stdev,
        lat.p99, lat.p999, wr_per_msg, cpu_per_msg_ns);
  } else {
    // check: random sizes, so the column is their mean, rounded to a whole byte like the others.
    fmt::print("{:<14} {:>8} {:>10} {:>12.4f} {:>12.6f} {:>7.2f} {:>9.0f}\n", to_string(plan.kind),
               std::llround(static_cast<double>(bytes) / std::max(1.0, n)), plan.iters, gbps, mpps,
               wr_per_msg, cpu_per_msg_ns);
  }
  std::fflush(stdout);
  return {};
}

Status run_client_one(const BenchOptions& o, const Plan& plan) {
  const milliseconds t(o.timeout_ms);
  auto conn = open_run(o, plan);
  if (!conn) return std::unexpected(conn.error());
  Connection& c = **conn;
  const int64_t cpu0 = self_cpu_ns();
  // Scripts that kill or stop a peer mid-stream wait for this line, not for a guessed time.
  fmt::print(stderr, "weft msg bench: connected ({})\n", to_string(plan.kind));
  std::fflush(stderr);
  std::vector<std::byte> buf(plan.max_message);
  pattern_fill(plan.seed, 0, std::span(buf).first(plan.size));
  auto r = plan.mode == "latency" ? ping_pong(c, plan, buf, t) : stream(c, plan, buf, t);
  if (!r) return std::unexpected(r.error());
  const int64_t cpu = self_cpu_ns() - cpu0;
  const Stats mine = c.stats();
  auto peer = take_report(c, t);
  if (!peer) return std::unexpected(peer.error());
  return print_run(o, plan, *r, mine, cpu, *peer);
}

Result<std::vector<uint32_t>> parse_sizes(const std::string& s) {
  std::vector<uint32_t> out;
  size_t at = 0;
  while (at <= s.size()) {
    auto comma = s.find(',', at);
    auto tok = s.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    uint32_t v = 0;
    auto r = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (r.ec != std::errc() || r.ptr != tok.data() + tok.size() || v > (1u << 24))
      return fail("--sizes: '{}' is not a size in 0..16777216", tok);
    out.push_back(v);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

// What the client will run, checked before anything is opened: a bad --type, --sizes or
// --senders, or more memory than the host has, is a usage error (exit 2), said at once.
struct Runs {
  std::vector<Kind> kinds;
  std::vector<uint32_t> sizes;
  uint32_t max_message = 0;
};

// MemAvailable from /proc/meminfo in bytes; 0 when it cannot be read (then nothing is refused).
uint64_t mem_available_bytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  uint64_t kb = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "MemAvailable: %lu kB", &kb) == 1) break;
  std::fclose(f);
  return kb * 1024;
}

Result<Runs> plan_runs(const BenchOptions& o) {
  Runs r;
  if (o.types == "all") {
    r.kinds = all_kinds();
  } else {
    size_t at = 0;
    while (at <= o.types.size()) {
      auto comma = o.types.find(',', at);
      auto k = parse_kind(o.types.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
      if (!k) return fail("--type: {}", k.error().message);
      r.kinds.push_back(*k);
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
  }
  auto sizes = parse_sizes(o.sizes);
  if (!sizes) return std::unexpected(sizes.error());
  r.sizes = o.mode == "check" ? std::vector<uint32_t>{0} : *sizes;
  r.max_message = o.max_message;
  if (r.max_message == 0)
    r.max_message =
        o.mode == "check" ? 65536 : std::max<uint32_t>(64, *std::max_element(sizes->begin(), sizes->end()));
  if (o.mode != "check" && r.max_message < *std::max_element(r.sizes.begin(), r.sizes.end()))
    return fail("--max-message {} is below the largest of --sizes", r.max_message);
  if (o.senders > 1 && (r.kinds.size() != 1 || r.kinds[0] != Kind::shared_ring))
    return fail("--senders {} needs --type shared-ring", o.senders);
  // Each end registers --slots x --max-message bytes for its buffers (the shared ring once per
  // sender on the receiver); a plan that cannot fit must not get as far as a failed mmap.
  const uint64_t per_end = uint64_t{o.slots} * r.max_message * std::max<uint32_t>(1, o.senders);
  const uint64_t avail = mem_available_bytes();
  if (avail != 0 && per_end > avail / 2)
    return fail(
        "--slots {} x --max-message {} needs {} MiB per end; this host has {} MiB available: "
        "lower --slots or the largest size",
        o.slots, r.max_message, per_end >> 20, avail >> 20);
  return r;
}

Status run_client(const BenchOptions& o, const Runs& runs) {
  // The device first: without one, say so now rather than after each run's side-channel set-up.
  if (auto dev = rdma::Device::open(o.device); !dev) return std::unexpected(dev.error());
  const std::vector<Kind>& kinds = runs.kinds;
  const std::vector<uint32_t>* sizes = &runs.sizes;
  const uint32_t max_message = runs.max_message;
  if (!o.json) {
    if (o.mode == "latency")
      fmt::print("{:<14} {:>8} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>9}\n", "#type",
                 "#bytes", "#iters", "t_min", "t_max", "t_typical", "t_avg", "t_stdev", "99%", "99.9%",
                 "WR/msg", "cpu_ns/msg");
    else
      fmt::print("{:<14} {:>8} {:>10} {:>12} {:>12} {:>7} {:>9}\n", "#type", "#bytes", "#iters", "BW[Gb/s]",
                 "MsgRate[Mpps]", "WR/msg", "cpu_ns/msg");
  }
  Status all{};
  for (Kind k : kinds)
    for (uint32_t size : *sizes) {
      Plan p{o.mode, k, size, max_message, o.slots, o.iters, o.warmup, o.seed, o.wait, o.senders, 0};
      const bool shared = k == Kind::shared_ring;
      if (auto s = shared ? run_shared_client(o, p) : run_client_one(o, p); !s) {
        fmt::print(stderr, "weft msg bench: {} {} B: {}\n", to_string(k), size, s.error().message);
        all = s;
        // The server is gone: the next run's set-up and the "quit" below would only try to reach
        // it until their limits (--setup-timeout-ms, --timeout-ms) before saying so again.
        if (server_gone(s.error())) return all;
      }
      if (shared && o.sender_index > 0)
        return all;  // one of several sender processes: sender 0 ends the server
    }
  // Tell the server to stop. It listened a moment ago: a refusal means it is gone, not starting.
  if (auto ch = rdma::SideChannel::connect(o.client, o.port, milliseconds(o.timeout_ms), false))
    (void)ch->exchange_record(to_bytes("quit"), 0, milliseconds(o.timeout_ms));
  return all;
}

// The options of `weft msg bench`, bound to `o` (which the registration owns).
void add_bench_options(CLI::App* sub, BenchOptions& o) {
  auto* srv =
      sub->add_flag("--server", o.server, "wait for a client (serves runs until the client says quit)");
  auto* cli = sub->add_option("--client", o.client, "connect to the server at HOST");
  srv->excludes(cli);
  sub->add_option("--bind", o.bind, "server: side-channel address to listen on")->capture_default_str();
  sub->add_option("--port", o.port, "side-channel TCP port")->capture_default_str();
  weft::cli::add_device_option(sub, o.device);
  sub->add_option("--type", o.types, "connection types, comma-separated, or all")->capture_default_str();
  sub->add_option("--sizes", o.sizes, "message sizes in bytes, comma-separated")->capture_default_str();
  sub->add_option("--mode", o.mode, "latency|bandwidth|check")
      ->check(CLI::IsMember({"latency", "bandwidth", "check"}))
      ->capture_default_str();
  sub->add_option("--wait", o.wait, "busy|channel")
      ->check(CLI::IsMember({"busy", "channel"}))
      ->capture_default_str();
  sub->add_option("--iters", o.iters, "messages per run (check: the number of random-size messages)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->capture_default_str();
  sub->add_option("--warmup", o.warmup, "latency: round trips not measured")->capture_default_str();
  sub->add_option("--slots", o.slots, "messages in flight")
      ->check(CLI::Range(2u, 4096u))
      ->capture_default_str();
  sub->add_option("--max-message", o.max_message, "largest message (default: the largest size; check: 65536)")
      ->check(CLI::Range(0u, 1u << 24));
  sub->add_option("--seed", o.seed, "check: pattern seed")->capture_default_str();
  sub->add_option("--timeout-ms", o.timeout_ms, "limit for each wait")
      ->check(CLI::Range(1, 3600000))
      ->capture_default_str();
  sub->add_option("--senders", o.senders, "shared-ring: senders into one receiver (forked by the client)")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  sub->add_option("--sender-index", o.sender_index,
                  "shared-ring: be only this sender of --senders (one process each; scripts)")
      ->check(CLI::Range(0, 63));
  sub->add_option("--abandon-at", o.abandon_at,
                  "shared-ring tests: reserve message N's space, then exit without writing it");
  sub->add_option("--setup-timeout-ms", o.setup_timeout_ms,
                  "limit for setting up each run (side channel, plan, connection)")
      ->check(CLI::Range(1, 3600000))
      ->capture_default_str();
  sub->add_flag("--json", o.json, "one JSON object per run (perftest's --out_json field names)");
  sub->add_option("--cdf", o.cdf, "latency: append each run's sorted samples to FILE (type wait bytes usec)");
}

// The command: usage errors (no role, a plan that cannot run) exit 2, everything else 1.
void run_bench_command(const BenchOptions& o) {
  if (!o.server && o.client.empty()) {
    fmt::print(stderr, "weft msg bench: give --server or --client HOST\n");
    weft::cli::set_exit_code(weft::cli::kUsageError);
    return;
  }
  Runs runs;
  if (!o.server) {
    auto r = plan_runs(o);
    if (!r) {
      fmt::print(stderr, "weft msg bench: {}\n", r.error().message);
      weft::cli::set_exit_code(weft::cli::kUsageError);
      return;
    }
    runs = std::move(*r);
  }
  auto s = o.server ? serve(o) : run_client(o, runs);
  if (!s) {
    fmt::print(stderr, "weft msg bench{}: {}\n", o.server ? " (server)" : "", s.error().message);
    weft::cli::set_exit_code(1);
  }
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto o = std::make_shared<BenchOptions>();
  auto* msg = root.app.add_subcommand("msg", "RDMA message connections (src/msg)");
  msg->require_subcommand(1);
  auto* sub =
      msg->add_subcommand("bench", "Latency, bandwidth or a byte-for-byte check of message connections");
  add_bench_options(sub, *o);
  sub->callback([o] { run_bench_command(*o); });
}};

}  // namespace
