// `weft rdma bench --server | --client HOST`: perftest's latency and bandwidth tests in one
// command, for SEND, WRITE, WRITE_IMM, READ, FETCH_ADD and COMPARE_SWAP over RC (SEND and WRITE
// also over UC, SEND also over UD), one size or the -a sweep, iteration or duration mode,
// busy/channel/epoll completion waits, and perftest's flags (-b, -q, -U, -r, -l, -o, -x, -i, -m,
// -S, -T, -R, --use-srq, --report_gbits, --perform_warm_up; rdma_bench_options.hpp parses them;
// rdma_bench_link.hpp makes the PD, CQ and QPs, or takes them from rdma_cm with -R).
// Figures are computed the way perftest computes them (see rdma_bench_stats.hpp), so each row can
// be compared with ib_*_lat / ib_*_bw on the same machine.
//
// Both sides are started with the same test flags; the client sends its parameters first and
// both refuse a mismatch with a message naming the fields. Then (per size) a barrier, the timed
// loop, a barrier. The client prints the report (text like perftest's, or JSON lines).
#include <fmt/format.h>

#include <array>
#include <bit>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/little_endian.hpp"
#include "base/log.hpp"
#include "cli/command_registry.hpp"
#include "cli/rdma_args.hpp"
#include "cli/rdma_bench_link.hpp"
#include "cli/rdma_bench_options.hpp"
#include "cli/rdma_bench_params.hpp"
#include "cli/rdma_bench_runs.hpp"
#include "cli/rdma_bench_stats.hpp"
#include "cli/rdma_side_channel.hpp"
#include "rdma/address_handle.hpp"
#include "rdma/completion_waiter.hpp"
#include "rdma/device.hpp"
#include "rdma/error.hpp"
#include "rdma/memory_region.hpp"
#include "rdma/queue_pair.hpp"
#include "rdma/shared_receive_queue.hpp"
#include "rdma/side_channel.hpp"

namespace {

using namespace weft;
using namespace weft::rdma;
using namespace weft::cli;
using std::chrono::milliseconds;

using Options = weft::cli::BenchOptions;

constexpr uint64_t kPeerTag = 1;  // the side channel's socket in the epoll set

// The transport as --json spells it (rc, uc, ud).
std::string_view lower_transport(const BenchParams& p) { return p.ud ? "ud" : p.uc ? "uc" : "rc"; }

std::string latency_json(const BenchParams& p, const Options& o, const std::string& dev,
                         const LatencyReport& r) {
  return fmt::format(
      "{{\"test\":\"lat\",\"op\":\"{}\",\"qp\":\"{}\",\"rdma_cm\":{},\"wait\":\"{}\",\"device\":\"{}\","
      "\"size\":{},"
      "\"iters\":{},\"unit\":\"usec\",\"rtt_divisor\":{},\"t_min\":{:.3f},\"t_max\":{:.3f},"
      "\"t_typical\":{:.3f},\"t_avg\":{:.3f},\"t_stdev\":{:.3f},\"p50\":{:.3f},\"p90\":{:.3f},\"p99\":{:.3f},"
      "\"p99_9\":{:.3f}}}\n",
      to_string(p.op), lower_transport(p), p.rdma_cm, o.wait, dev, r.size, r.iters,
      is_one_sided_round(p.op) ? 1 : 2, r.min_us, r.max_us, r.typical_us, r.avg_us, r.stdev_us, r.typical_us,
      r.p90_us, r.p99_us, r.p999_us);
}

std::string bandwidth_json(const BenchParams& p, const BenchPlan& plan, const Options& o,
                           const std::string& dev, const BandwidthReport& r,
                           const std::vector<SecondRate>& seconds) {
  std::string per_second;
  if (plan.per_second) {
    per_second = ",\"per_second\":[";
    for (size_t i = 0; i < seconds.size(); ++i)
      per_second +=
          fmt::format("{}{{\"second\":{},\"messages\":{},\"bw_mbps\":{:.3f},\"msg_rate_mpps\":{:.6f}}}",
                      i ? "," : "", seconds[i].second, seconds[i].messages, seconds[i].mbps, seconds[i].mpps);
    per_second += "]";
  }
  return fmt::format(
      "{{\"test\":\"bw\",\"op\":\"{}\",\"qp\":\"{}\",\"rdma_cm\":{},\"wait\":\"{}\",\"device\":\"{}\","
      "\"size\":{},"
      "\"iters\":{},\"tx_depth\":{},\"cq_mod\":{},\"post_list\":{},\"qps\":{},\"bidirectional\":{},\"bw_peak_"
      "mbps\":{:."
      "3f},"
      "\"bw_avg_mbps\":{:.3f},\"bw_peak_gbits\":{:.4f},\"bw_avg_gbits\":{:.4f},\"msg_rate_mpps\":{:.6f}{}}}"
      "\n",
      to_string(p.op), lower_transport(p), p.rdma_cm, o.wait, dev, r.size, r.iters, p.tx_depth, p.cq_mod,
      p.post_list, p.num_qps, p.bidirectional, r.peak_mbps, r.avg_mbps, mib_to_gbits(r.peak_mbps),
      mib_to_gbits(r.avg_mbps), r.msg_rate_mpps, per_second);
}

// Both sides send their parameters before any QP exists; a different test is said on both
// sides (exit 2), naming each field that differs.
Status agree_on_test(SideChannel& chan, const BenchParams& mine, const Options& o, bool& usage) {
  const milliseconds timeout(o.timeout_ms);
  auto enc = encode(mine);
  if (auto s = chan.send_all(std::as_bytes(std::span(enc)), timeout); !s) return s;
  std::array<uint8_t, kBenchParamsBytes> theirs{};
  if (auto s = chan.recv_all(std::as_writable_bytes(std::span(theirs)), timeout); !s) return s;
  auto peer = decode_bench_params(theirs);
  if (!peer) return std::unexpected(peer.error());
  if (auto d = bench_mismatch(mine, *peer); !d.empty()) {
    usage = true;
    return fail("the {} runs another test: {}", o.server ? "client" : "server", d);
  }
  return {};
}

// perftest's default inline sizes for latency (SEND 236, UD 188, WRITE 220); none for bandwidth.
// (perftest itself inlines only on devices it knows, so on rxe it inlines nothing: give -I 0 to
// compare like with like there; the header says what was inlined.)
uint32_t inline_wanted(const BenchParams& p, const Options& o) {
  if (o.inline_size >= 0) return static_cast<uint32_t>(o.inline_size);
  if (p.test == BenchTest::lat && !is_one_sided_round(p.op))
    return p.op == BenchOp::send ? (p.ud ? 188 : 236) : 220;
  return 0;
}

// -b: the server's own figures go to the client after each size (three doubles, little-endian
// bit patterns), which reports the sum as perftest does.
Status send_report(SideChannel& chan, const BandwidthReport& r, milliseconds timeout) {
  std::array<uint8_t, 24> out{};
  const double v[3] = {r.peak_mbps, r.avg_mbps, r.msg_rate_mpps};
  for (int i = 0; i < 3; ++i) le::store<uint64_t>(out.data() + 8 * i, std::bit_cast<uint64_t>(v[i]));
  return chan.send_all(std::as_bytes(std::span(out)), timeout);
}

Result<BandwidthReport> recv_report(SideChannel& chan, milliseconds timeout) {
  std::array<uint8_t, 24> in{};
  if (auto s = chan.recv_all(std::as_writable_bytes(std::span(in)), timeout); !s)
    return std::unexpected(s.error());
  BandwidthReport r;
  r.peak_mbps = std::bit_cast<double>(le::load<uint64_t>(in.data()));
  r.avg_mbps = std::bit_cast<double>(le::load<uint64_t>(in.data() + 8));
  r.msg_rate_mpps = std::bit_cast<double>(le::load<uint64_t>(in.data() + 16));
  return r;
}

// The bandwidth run of one size on this side: warm-up, the timed stream, and with -b the sum with
// the peer's figures (after the closing barrier, so both streams have ended).
Result<std::optional<BandwidthReport>> bandwidth_size(Bench& b, uint64_t size, milliseconds run_limit) {
  const bool sends = !b.o.server || b.p.bidirectional;
  std::optional<BandwidthReport> mine;
  if (sends) {
    if (b.p.warm_up)
      if (auto s = b.warm_up(size); !s) return std::unexpected(s.error());
    auto r = b.stream(size);
    if (!r) return std::unexpected(r.error());
    mine = *r;
    if (b.p.bidirectional && needs_recv(b.p.op))
      if (auto s = b.drain_peer(); !s) return std::unexpected(s.error());
  } else if (needs_recv(b.p.op)) {
    // One-sided operations leave the server idle; SEND/WRITE_IMM streams end in its CQ.
    if (auto s = b.sink(); !s) return std::unexpected(s.error());
  }
  if (auto s = b.chan.barrier(run_limit); !s) return std::unexpected(s.error());
  if (!b.p.bidirectional) return mine;
  if (b.o.server) {
    if (auto s = send_report(b.chan, *mine, b.timeout); !s) return std::unexpected(s.error());
    return std::optional<BandwidthReport>{};
  }
  auto peer = recv_report(b.chan, b.timeout);
  if (!peer) return std::unexpected(peer.error());
  return sum_reports(*mine, *peer);
}

// One line per size (the client prints; the server only takes part), both sides meeting at a
// barrier before and after each size.
Status each_size(Bench& b, const std::vector<uint64_t>& sizes, std::FILE* cdf) {
  const Options& o = b.o;
  const BenchParams& mine = b.p;
  const bool lat = mine.test == BenchTest::lat;
  const std::string dev_name = b.dev.name();
  // Long enough for the peer's whole run of one size.
  const milliseconds run_limit(o.timeout_ms + int64_t{mine.duration_ms} + 600'000);
  for (uint64_t size : sizes) {
    if (is_atomic(mine.op) && size != 8) continue;
    if (lat && !is_one_sided_round(mine.op) && size < 2) continue;
    if (auto s = b.chan.barrier(run_limit); !s) return s;
    if (auto* pl = b.waiter.poller()) {
      (void)pl->unwatch_fd(b.chan.fd());
      if (auto s = pl->watch_fd(b.chan.fd(), kPeerTag); !s) return s;
    }
    std::string line;
    if (!lat) {
      auto r = bandwidth_size(b, size, run_limit);
      if (!r) return std::unexpected(r.error());
      if (*r && !o.server) {
        line = o.json ? bandwidth_json(mine, b.plan, o, dev_name, **r, b.seconds)
                      : bandwidth_line(**r, b.plan.report_gbits);
        if (!o.json)
          for (const auto& sr : b.seconds)
            line +=
                fmt::format("# second {}: {} messages, BW {:.2f} {}, MsgRate {:.6f} Mpps\n", sr.second + 1,
                            sr.messages, b.plan.report_gbits ? mib_to_gbits(sr.mbps) : sr.mbps,
                            b.plan.report_gbits ? "Gb/sec" : "MB/sec", sr.mpps);
      }
    } else {
      std::optional<LatencyReport> r;
      if (!is_one_sided_round(mine.op)) {
        auto got = b.pingpong(size);
        if (!got) return std::unexpected(got.error());
        r = *got;
      } else if (!o.server) {
        auto got = b.round_trips(size);
        if (!got) return std::unexpected(got.error());
        r = *got;
      }
      if (r && !o.server) {
        line = o.json ? latency_json(mine, o, dev_name, *r) : latency_line(*r);
        if (b.plan.unsorted && !o.json) line = b.unsorted + latency_header() + line;
        if (cdf)
          for (double v : r->sorted_us) fmt::print(cdf, "{} {:.3f}\n", r->size, v);
      }
      if (auto s = b.chan.barrier(run_limit); !s) return s;
    }
    if (!line.empty()) {
      fmt::print("{}", line);
      std::fflush(stdout);
    }
    if (o.server && !lat && needs_recv(mine.op))
      log().info("rdma bench server: size {}: {} messages received", size, b.received);
  }
  return {};
}

// The client's header and --cdf file around the runs of every size.
Status run_sizes(Bench& b, const std::vector<uint64_t>& sizes, uint32_t mtu,
                 const std::vector<std::string>& notes) {
  const Options& o = b.o;
  const BenchParams& mine = b.p;
  const bool lat = mine.test == BenchTest::lat;
  const std::string dev_name = b.dev.name();
  std::FILE* cdf = nullptr;
  if (!o.cdf.empty() && !o.server) {
    cdf = std::fopen(o.cdf.c_str(), "w");
    if (!cdf) return fail_errno(fmt::format("open {}", o.cdf), errno);
  }
  // perftest's silent adjustments, said (on stderr with --json, so stdout stays JSON lines).
  for (const auto& n : notes) fmt::print(o.json ? stderr : stdout, "# adjusted like perftest: {}\n", n);
  if (!o.server && !o.json) {
    fmt::print(
        "# weft rdma bench: {} {} {}{} on {} port {} (MTU {}), wait {}, tx_depth {}, cq_mod {}, inline "
        "{}{}{}{}{}{}\n",
        to_string(mine.op), lat ? "latency" : "bandwidth", transport_name(mine.ud, mine.uc),
        mine.rdma_cm ? " (rdma_cm)" : "", dev_name, b.plan.ib_port, mtu, o.wait, mine.tx_depth, mine.cq_mod,
        b.inline_max,
        needs_recv(mine.op) ? fmt::format(", rx_depth {}{}", b.rx_depth, b.srq ? " (SRQ)" : "")
                            : std::string(),
        mine.post_list > 1 ? fmt::format(", post_list {}", mine.post_list) : std::string(),
        mine.num_qps > 1 ? fmt::format(", {} QPs", mine.num_qps) : std::string(),
        mine.bidirectional ? ", bidirectional (sum of both sides)" : "",
        mine.duration_ms ? fmt::format(", {} s per size", o.duration_s)
                         : fmt::format(", {} iterations", mine.iters));
    if (!b.plan.unsorted) fmt::print("{}", lat ? latency_header() : bandwidth_header(b.plan.report_gbits));
  }
  auto ran = each_size(b, sizes, cdf);
  if (cdf) std::fclose(cdf);
  return ran;
}

// The arguments on their own, before any device or peer.
Result<BenchPlan> check_usage(const Options& o) {
  auto plan = plan_bench(o);
  if (!plan) return plan;
  if (plan->params.test == BenchTest::lat && plan->params.op == BenchOp::write && o.wait != "busy")
    return fail("WRITE latency polls memory for the peer's WRITE (like ib_write_lat): use --wait busy");
  return plan;
}

ibv_mtu mtu_enum(uint32_t bytes) {
  switch (bytes) {
    case 256:
      return IBV_MTU_256;
    case 512:
      return IBV_MTU_512;
    case 2048:
      return IBV_MTU_2048;
    case 4096:
      return IBV_MTU_4096;
    default:
      return IBV_MTU_1024;
  }
}

// `usage` is set when the error is the user's arguments (exit 2).
Status run(const Options& o, bool& usage) {
  auto planned = check_usage(o);
  if (!planned) {
    usage = true;
    return std::unexpected(planned.error());
  }
  BenchPlan plan = std::move(*planned);
  const BenchParams mine = plan.params;
  const milliseconds timeout(o.timeout_ms);
  const auto mode = *parse_wait_mode(o.wait);

  // The device first: a UD size above its MTU is a usage error, said before waiting for a peer.
  auto dev = Device::open(o.device);
  if (!dev) return std::unexpected(dev.error());
  auto port = dev->port(plan.ib_port);
  if (!port) return std::unexpected(port.error());
  // -m: as perftest, never above the port's active MTU.
  ibv_mtu path_mtu = port->active_mtu;
  if (plan.mtu) {
    path_mtu = mtu_enum(plan.mtu);
    if (path_mtu > port->active_mtu) {
      plan.notes.push_back(fmt::format("mtu {} -> {} (the port's active MTU)", plan.mtu,
                                       128u << static_cast<int>(port->active_mtu)));
      path_mtu = port->active_mtu;
    }
  }
  const uint32_t mtu = 128u << static_cast<int>(path_mtu);
  // -a sweeps 2 B .. 8 MiB (UD: .. the MTU), like perftest.
  const auto sizes = size_sweep(mine.all_sizes, mine.size, mine.ud ? mtu : kRdmaMaxMessage);
  if (mine.ud && !mine.all_sizes)
    if (auto s = check_ud_size(mine.size, mtu, dev->name()); !s) {
      usage = true;
      return s;
    }
  // Side channel, then the parameters: a mismatch is said before any QP is made.
  auto opened = weft::cli::open_side_channel({o.server, o.bind, o.client, o.port, timeout}, "bench");
  if (!opened) return std::unexpected(opened.error());
  std::optional<SideChannel> chan(std::move(*opened));
  if (auto s = agree_on_test(*chan, mine, o, usage); !s) return s;
  auto addr = weft::cli::side_channel_ipv4(*chan, "bench");
  if (!addr) return std::unexpected(addr.error());

  auto caps = dev->caps();
  if (!caps) return std::unexpected(caps.error());
  if (is_atomic(mine.op) && !caps->atomics) return fail("{} has no atomics (atomic_cap NONE)", dev->name());
  ConnectOptions co;
  co.port = plan.ib_port;
  ibv_gid my_gid{};
  if (plan.gid_index >= 0) {
    // -x: the user's GID index, as perftest takes it.
    if (::ibv_query_gid(dev->raw(), plan.ib_port, plan.gid_index, &my_gid))
      return fail_errno(
          fmt::format("-x {}: no such GID index on {} port {}", plan.gid_index, dev->name(), plan.ib_port),
          errno);
    co.gid_index = plan.gid_index;
  } else if (!plan.rdma_cm || mine.ud) {
    // (-R: rdma_cm picks the GID of the address; UD still needs its index for the AH, the
    // RoCE v2 GID of the same address on the same device.)
    auto gid = dev->roce_v2_gid(*addr);
    if (!gid) return std::unexpected(gid.error());
    co.gid_index = static_cast<int>(gid->index);
    my_gid = gid->gid;
  }
  co.mtu = path_mtu;
  co.sl = plan.sl;
  co.traffic_class = plan.traffic_class;
  // As many READs/atomics in flight as the device allows (perftest's default), up to tx_depth;
  // -o asks for a number, lowered to the device's maximum as perftest does.
  const int device_reads = std::min(caps->max_qp_rd_atom, caps->max_qp_init_rd_atom);
  int reads = std::min(device_reads, int(mine.tx_depth));
  if (plan.out_reads) {
    reads = plan.out_reads;
    if (reads > device_reads) {
      plan.notes.push_back(
          fmt::format("outstanding reads {} -> {} (the device's maximum)", reads, device_reads));
      reads = device_reads;
    }
  }
  co.max_rd_atomic = static_cast<uint8_t>(std::clamp(reads, 1, 255));

  const uint32_t rx_depth = plan.rx_depth;
  const uint32_t nq = mine.num_qps;
  const uint32_t want_inline = inline_wanted(mine, o);
  const uint64_t max_size = sizes.back();
  const size_t buf = (max_size + kGrhBytes + 4095) / 4096 * 4096;
  // Busy polling on a side that takes SEND/WRITE_IMM messages: receives complete in a CQ of their
  // own, as perftest's (its recv_cq where has_recv_comp and the side receives), so a loop that
  // sends and receives (-b, latency) polls each kind apart as perftest does.
  const bool own_recv_cq = mode == WaitMode::busy && !plan.rdma_cm && needs_recv(mine.op) &&
                           (mine.test == BenchTest::lat || o.server || mine.bidirectional);
  BenchLinkSpec spec{.server = o.server,
                     .bind = o.bind,
                     .client = o.client,
                     .port = o.port,
                     .device = o.device,
                     .timeout = timeout,
                     .mode = mode,
                     .qp = QpOptions{.type = mine.ud   ? QpType::ud
                                             : mine.uc ? QpType::uc
                                                       : QpType::rc,
                                     .max_send_wr = mine.tx_depth,
                                     .max_recv_wr = rx_depth,
                                     .max_inline = want_inline,
                                     .signal_all = false},
                     .co = co,
                     .my_gid = my_gid,
                     .num_qps = nq,
                     .cq_depth = static_cast<int>((mine.tx_depth + rx_depth) * nq + 16),
                     .recv_cq_depth = own_recv_cq ? static_cast<int>(rx_depth * nq + 16) : 0,
                     // --use-srq: one SRQ of rx_depth receives feeds every QP (perftest's SRQ mode).
                     .use_srq = plan.use_srq,
                     .srq_depth = rx_depth,
                     .mr_bytes = 2 * buf,
                     .target_off = buf,
                     .rdma_cm = plan.rdma_cm,
                     .tos = o.tos ? std::optional<uint8_t>(plan.traffic_class) : std::nullopt};
  auto link = link_bench(*chan, std::move(*dev), spec);
  if (!link) return std::unexpected(link.error());
  auto waiter = CompletionWaiter::create(link->cq(), mode);
  if (!waiter) return std::unexpected(waiter.error());
  if (auto* pl = waiter->poller())
    if (auto s = pl->watch_fd(chan->fd(), kPeerTag); !s) return s;

  Bench b{.o = o,
          .plan = plan,
          .p = mine,
          .active = !o.server,
          .timeout = timeout,
          .chan = *chan,
          .dev = link->dev,
          .qps = link->qps,
          .mr = std::move(*link->mr),
          .cq = link->cq(),
          .waiter = *waiter,
          .rcq = link->recv_cq(),
          .ah = std::move(link->ah),
          .peer = link->peers[0]};
  b.peers = link->peers;
  for (uint32_t i = 0; i < b.qps.size(); ++i) b.qp_of_num[b.qps[i].qpn()] = i;
  b.srq = std::move(link->srq);
  b.buf = buf;
  b.recv_off = mine.ud ? kGrhBytes : 0;
  b.inline_max = std::min(want_inline, b.qps[0].max_inline());
  b.rx_depth = rx_depth;
  if (needs_recv(mine.op))
    for (uint32_t i = 0; i < (b.srq ? 1 : nq); ++i)
      if (auto s = b.post_recvs(rx_depth, 0, i); !s) return s;

  return run_sizes(b, sizes, mtu, plan.notes);
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto opts = std::make_shared<Options>();
  auto* sub = root.rdma->add_subcommand(
      "bench",
      "perftest-style latency/bandwidth of SEND, WRITE, WRITE_IMM, READ, FAA, CAS (RC, UC; SEND also UD)");
  weft::cli::add_bench_options(sub, *opts);
  sub->callback([opts] {
    const Options& o = *opts;
    if (!o.server && o.client.empty()) {
      fmt::print(stderr, "weft rdma bench: give --server or --client HOST\n");
      weft::cli::set_exit_code(weft::cli::kUsageError);
      return;
    }
    bool usage = false;
    if (auto s = run(o, usage); !s) {
      fmt::print(stderr, "weft rdma bench: {}\n", s.error().message);
      weft::cli::set_exit_code(usage ? weft::cli::kUsageError : 1);
    }
  });
}};

}  // namespace
