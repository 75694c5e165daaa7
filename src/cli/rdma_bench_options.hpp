#pragma once
// The command line of `weft rdma bench`: weft's own spellings plus perftest's (ib_*_lat/_bw) for
// the same things, with perftest's meaning, and the plan made of them before any verbs: perftest's
// defaults, its silent clamps (said aloud here, as notes), and its refusals of combinations (usage
// errors, exit 2, naming the flag). A library, so that unit tests parse what the command parses.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "cli/rdma_bench_params.hpp"

namespace weft::cli {

struct BenchOptions {
  bool server = false;
  std::string client;
  std::string bind = "0.0.0.0";
  uint16_t port = 47060;
  std::string device;
  std::string op = "send";
  std::string test = "lat";
  std::string qp;          // --qp rc|uc|ud (weft's spelling); "" = rc
  std::string connection;  // -c RC|UC|UD (perftest's spelling); "" = rc
  std::string wait = "busy";
  bool all = false;
  uint32_t size = 0;      // 0: perftest's default (2 B latency, 64 KiB bandwidth, 8 B atomics)
  uint64_t iters = 0;     // 0: 1000 latency, 5000 bandwidth
  double duration_s = 0;  // > 0: duration mode
  uint32_t tx_depth = 0;  // 0: 1 latency, 128 bandwidth
  uint32_t cq_mod = 0;    // 0: 1 latency, min(100, tx_depth) bandwidth (the post list with -l)
  int inline_size = -1;   // -1: perftest's default (latency SEND 236/188 UD, WRITE 220; else 0)
  bool json = false;
  bool per_second = false;  // --per-second: with -D, one line per second of the run
  std::string cdf;          // write the kept latency samples here (size, usec per line)
  int timeout_ms = 5000;
  // perftest's flags.
  bool bidirectional = false;  // -b
  uint32_t num_qps = 1;        // -q
  bool unsorted = false;       // -U
  bool report_gbits = false;   // --report_gbits
  bool warm_up = false;        // --perform_warm_up
  bool use_srq = false;        // --use-srq
  uint32_t rx_depth = 0;       // -r; 0: 512 for SEND/WRITE_IMM
  uint32_t post_list = 1;      // -l
  int out_reads = 0;           // -o; 0: as many as the device allows
  int gid_index = -1;          // -x; -1: the RoCE v2 GID of the side channel's address
  int ib_port = 1;             // -i
  uint32_t mtu = 0;            // -m; 0: the port's active MTU
  int sl = 0;                  // -S
  int tos = 0;                 // -T (the GRH traffic class)
  bool rdma_cm = false;        // -R: connect the QP with rdma_cm and run the test on it
};

// Registers every option of `weft rdma bench` on `sub` (CLI11 range and choice checks: a bad
// value is a usage error naming the flag).
void add_bench_options(CLI::App* sub, BenchOptions& o);

// What one side runs: the record both sides agree on, and what stays local.
struct BenchPlan {
  BenchParams params;
  uint32_t rx_depth = 1;  // receives kept posted (SEND, WRITE_IMM), else 1
  int out_reads = 0;      // 0: the device's maximum (min of tx_depth)
  int gid_index = -1;
  uint8_t ib_port = 1;
  uint32_t mtu = 0;  // bytes; 0: the port's active MTU
  uint8_t sl = 0;
  uint8_t traffic_class = 0;
  bool rdma_cm = false;  // -R: rdma_cm (rdma::CmConnection) makes and connects the QP
  bool unsorted = false;
  bool report_gbits = false;
  bool per_second = false;
  bool use_srq = false;  // receives from one shared receive queue of rx_depth for all QPs
  // perftest's silent adjustments, made here too, and said: "tx_depth 128 -> 10 (-n 10)".
  std::vector<std::string> notes;
};

// perftest's defaults, clamps and refusals (perftest_parameters.c: force_dependecies and the
// option parser). An error is a usage error (exit 2) and names the flag.
Result<BenchPlan> plan_bench(const BenchOptions& o);

// perftest's Gb/s (10^9 bits) from its MB/s (MiB, 2^20 bytes).
inline double mib_to_gbits(double mib_per_s) { return mib_per_s * 1048576.0 * 8 / 1e9; }

}  // namespace weft::cli
