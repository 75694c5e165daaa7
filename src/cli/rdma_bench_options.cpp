#include "cli/rdma_bench_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "cli/rdma_args.hpp"

namespace weft::cli {

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// --qp (weft) and -c (perftest) name the same thing; both given must agree.
Result<std::string> transport_of(const BenchOptions& o) {
  const std::string qp = lower(o.qp), c = lower(o.connection);
  if (!qp.empty() && !c.empty() && qp != c)
    return fail("--qp {} and -c {} name different transports: give one", o.qp, o.connection);
  return !qp.empty() ? qp : !c.empty() ? c : std::string("rc");
}

}  // namespace

void add_bench_options(CLI::App* sub, BenchOptions& o) {
  auto* srv = sub->add_flag("--server", o.server, "wait for a client");
  auto* cli = sub->add_option("--client", o.client, "connect to the server at HOST");
  srv->excludes(cli);
  sub->add_option("--bind", o.bind, "server: side-channel address to listen on")->capture_default_str();
  sub->add_option("--port", o.port, "side-channel TCP port")->capture_default_str();
  add_device_option(sub, o.device);
  sub->add_option("--op", o.op, "send|write|write_imm|read|faa|cas")
      ->capture_default_str()
      ->check(CLI::IsMember({"send", "write", "write_imm", "write_with_imm", "read", "faa", "fetch_add",
                             "atomic_faa", "cas", "compare_swap", "atomic_cas"}));
  sub->add_option("--test", o.test, "lat (ping-pong RTT/2; READ/atomics full RTT) or bw")
      ->capture_default_str()
      ->check(CLI::IsMember({"lat", "bw"}));
  sub->add_option("--qp", o.qp, "rc|uc|ud (UD: SEND only, size <= MTU; UC: SEND and WRITE)")
      ->check(CLI::IsMember({"rc", "uc", "ud"}, CLI::ignore_case));
  sub->add_option("-c,--connection", o.connection, "perftest's spelling of --qp: RC|UC|UD")
      ->check(CLI::IsMember({"rc", "uc", "ud"}, CLI::ignore_case));
  sub->add_option("--wait", o.wait, "busy|channel|epoll")
      ->capture_default_str()
      ->check(CLI::IsMember({"busy", "channel", "epoll"}));
  sub->add_flag("-a,--all", o.all, "sweep sizes 2 B .. 8 MiB (UD: .. the MTU)");
  sub->add_option("-s,--size", o.size, "message bytes (default 2 lat, 65536 bw, 8 atomics)")
      ->check(CLI::Range(uint64_t{1}, kRdmaMaxMessage));
  sub->add_option("-n,--iters", o.iters, "iterations per size (default 1000 lat, 5000 bw)")
      ->check(CLI::Range(uint64_t{5}, uint64_t{100'000'000}));
  sub->add_option("-D,--duration", o.duration_s, "seconds per size instead of --iters")
      ->check(CLI::Range(0.1, 3600.0));
  sub->add_flag("--per-second", o.per_second, "with -D, bandwidth: also the rates of each second of the run");
  sub->add_option("-t,--tx-depth", o.tx_depth,
                  "send queue depth / WRs in flight (default 1 lat, 128 bw; at most -n, like perftest)")
      ->check(CLI::Range(1, 16384));
  sub->add_option("-Q,--cq-mod", o.cq_mod,
                  "signal one WR in this many (default 1 lat, min(100, tx_depth) bw; at most tx_depth)")
      ->check(CLI::Range(1, 16384));
  sub->add_option("-I,--inline,--inline_size", o.inline_size,
                  "inline up to this many bytes (default like perftest on a device it knows)")
      ->check(CLI::Range(0, 4096));
  sub->add_flag("--json", o.json, "one JSON object per size instead of perftest-like text");
  sub->add_option("--cdf", o.cdf, "client, latency: write the kept samples (size usec) to this file");
  add_timeout_ms_option(sub, o.timeout_ms, "limit for each wait for the peer");
  // perftest's flags, spelled as perftest spells them.
  sub->add_flag("-b,--bidirectional", o.bidirectional, "bandwidth: both sides send at once (sum reported)");
  sub->add_option("-q,--qps,--num-qps", o.num_qps, "bandwidth: QPs streaming at once (-n messages each)")
      ->check(CLI::Range(uint32_t{1}, uint32_t{kBenchMaxQps}));
  sub->add_flag("-U,--report-unsorted", o.unsorted, "latency: also print every sample in the order taken");
  sub->add_flag("--report_gbits,--report-gbits", o.report_gbits,
                "bandwidth in Gb/s (10^9 bit) instead of MiB/s");
  sub->add_flag("--perform_warm_up,--perform-warm-up", o.warm_up,
                "WRITE/READ/atomic bandwidth: tx_depth untimed WRs first");
  sub->add_flag("--use-srq,--use_srq", o.use_srq, "SEND/WRITE_IMM: receives from one shared receive queue");
  sub->add_option("-r,--rx-depth", o.rx_depth,
                  "receives kept posted (SEND/WRITE_IMM; default 512, at most -n)")
      ->check(CLI::Range(1, 16384));
  sub->add_option("-l,--post_list,--post-list", o.post_list,
                  "bandwidth: WRs per ibv_post_send (CQ moderation follows unless -Q)")
      ->check(CLI::Range(1, 16384));
  sub->add_option("-o,--outs", o.out_reads,
                  "READ/atomics: outstanding requests (default the device's maximum)")
      ->check(CLI::Range(1, 255));
  sub->add_option("-x,--gid-index", o.gid_index, "source GID index (default the RoCE v2 GID of the address)")
      ->check(CLI::Range(0, 255));
  sub->add_option("-i,--ib-port", o.ib_port, "device port")->capture_default_str()->check(CLI::Range(1, 255));
  sub->add_option("-m,--mtu", o.mtu, "path MTU 256|512|1024|2048|4096 (default the port's active MTU)")
      ->check(CLI::IsMember({256u, 512u, 1024u, 2048u, 4096u}));
  sub->add_option("-S,--sl", o.sl, "service level 0-15")->check(CLI::Range(0, 15));
  sub->add_option("-T,--tos", o.tos, "traffic class of the GRH 0-255")->check(CLI::Range(0, 255));
  sub->add_flag("-R,--rdma_cm,--rdma-cm", o.rdma_cm,
                "connect the QP with rdma_cm and run the test on it (RC)");
}

Result<BenchPlan> plan_bench(const BenchOptions& o) {
  BenchPlan plan;
  BenchParams& p = plan.params;
  auto& notes = plan.notes;
  auto op = parse_bench_op(o.op);
  if (!op) return fail("--op: unknown operation '{}'", o.op);
  p.op = *op;
  p.test = o.test == "bw" ? BenchTest::bw : BenchTest::lat;
  auto transport = transport_of(o);
  if (!transport) return std::unexpected(transport.error());
  p.ud = *transport == "ud";
  p.uc = *transport == "uc";
  p.all_sizes = o.all;
  const bool lat = p.test == BenchTest::lat;
  p.size = o.size ? o.size : is_atomic(p.op) ? 8 : lat ? 2 : 65536;
  p.iters = o.iters ? o.iters : lat ? 1000 : 5000;
  p.duration_ms = static_cast<uint32_t>(o.duration_s * 1000);
  p.tx_depth = o.tx_depth ? o.tx_depth : lat ? 1 : 128;
  p.bidirectional = o.bidirectional;
  p.warm_up = o.warm_up;
  p.post_list = o.post_list;
  p.num_qps = static_cast<uint16_t>(o.num_qps);
  p.rdma_cm = o.rdma_cm;
  const bool iterations = p.duration_ms == 0;
  // perftest: never more WRs in flight than the run has (force_dependecies).
  if (iterations && p.tx_depth > p.iters) {
    notes.push_back(fmt::format("tx_depth {} -> {} (-n {})", p.tx_depth, p.iters, p.iters));
    p.tx_depth = static_cast<uint32_t>(p.iters);
  }
  if (o.cq_mod) {
    p.cq_mod = o.cq_mod;
    if (p.cq_mod > p.tx_depth) {
      notes.push_back(fmt::format("cq_mod {} -> {} (tx_depth)", p.cq_mod, p.tx_depth));
      p.cq_mod = p.tx_depth;
    }
  } else if (p.post_list > 1 && !lat) {
    // perftest: "Post List requested - CQ moderation will be the size of the post list".
    p.cq_mod = p.post_list;
  } else {
    p.cq_mod = lat ? 1 : std::min<uint32_t>(100, p.tx_depth);
  }
  if (auto s = validate(p); !s) return std::unexpected(s.error());

  // What stays on this side.
  if (o.unsorted && !lat) return fail("-U (unsorted samples) is only available in latency tests");
  if (o.report_gbits && lat) return fail("--report_gbits is only available in bandwidth tests");
  if (o.per_second && (lat || iterations)) return fail("--per-second needs a bandwidth test with -D SECONDS");
  if (o.out_reads && !is_one_sided_round(p.op))
    return fail("-o (outstanding reads) is only available with READ and atomics");
  if (o.rx_depth && !needs_recv(p.op))
    return fail("-r (rx depth) is only available with SEND and WRITE_IMM ({} posts no receives)",
                to_string(p.op));
  if (!needs_recv(p.op)) {
    plan.rx_depth = 1;
  } else {
    plan.rx_depth = o.rx_depth ? o.rx_depth : 512;
    if (iterations && plan.rx_depth > p.iters) {
      if (o.rx_depth)
        notes.push_back(fmt::format("rx_depth {} -> {} (-n {})", plan.rx_depth, p.iters, p.iters));
      plan.rx_depth = static_cast<uint32_t>(p.iters);
    }
  }
  if (o.use_srq && !needs_recv(p.op))
    return fail("--use-srq is only available in SEND and WRITE_IMM tests ({} posts no receives)",
                to_string(p.op));
  if (o.use_srq && plan.rx_depth < p.num_qps)
    return fail("--use-srq: the SRQ depth (-r {}) must be at least the number of QPs (-q {})", plan.rx_depth,
                p.num_qps);
  if (o.rdma_cm) {
    // rdma_cm resolves the address to a device, port, GID and path (perftest -R takes them from
    // the connection too): a flag that picks one of them is refused rather than ignored.
    if (o.gid_index >= 0) return fail("-x (GID index): with -R rdma_cm picks the GID of the address");
    if (o.ib_port != 1) return fail("-i (port): with -R rdma_cm picks the port of the address");
    if (o.mtu) return fail("-m (MTU): with -R the path MTU is the one rdma_cm resolves");
    if (o.sl) return fail("-S (service level): with -R the path is the one rdma_cm resolves (use -T)");
    if (o.use_srq) return fail("--use-srq: not supported with -R (the rdma_cm connection has no SRQ)");
  }
  plan.rdma_cm = o.rdma_cm;
  plan.use_srq = o.use_srq;
  plan.out_reads = o.out_reads;
  plan.gid_index = o.gid_index;
  plan.ib_port = static_cast<uint8_t>(o.ib_port);
  plan.mtu = o.mtu;
  plan.sl = static_cast<uint8_t>(o.sl);
  plan.traffic_class = static_cast<uint8_t>(o.tos);
  plan.unsorted = o.unsorted;
  plan.report_gbits = o.report_gbits;
  plan.per_second = o.per_second;
  return plan;
}

}  // namespace weft::cli
