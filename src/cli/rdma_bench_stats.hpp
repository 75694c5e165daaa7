#pragma once
// The figures `weft rdma bench` reports, computed exactly as perftest computes them, so that the
// two can be compared row by row (perftest_parameters.c: print_report_lat, print_report_bw):
//
// - latency: one sample per iteration, the time between two consecutive posts (so a sample is a
//   whole round, post overhead included); sorted, the 2 largest dropped (LAT_MEASURE_TAIL),
//   divided by 2 for ping-pong operations (SEND, WRITE, WRITE_IMM: RTT/2) and by 1 for READ and
//   atomics (a full round trip). t_typical is the median, p99/p99.9 the ceil(n*q)-th sample.
// - bandwidth: bytes over (last completion - first post); MB/s are MiB (2^20) per second like
//   perftest's default; message rate in millions per second. The peak is the best average over
//   any run of consecutive messages that ends at a signalled completion.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace weft::cli {

struct LatencyReport {
  uint64_t size = 0, iters = 0;
  double min_us = 0, max_us = 0, typical_us = 0, avg_us = 0, stdev_us = 0, p90_us = 0, p99_us = 0,
         p999_us = 0;
  std::vector<double> sorted_us;  // the samples kept, sorted (for CDF plots)
};

// post_ns: the post time of every iteration (iters of them). rtt_divisor: 2 or 1 (see above).
LatencyReport latency_report(std::span<const int64_t> post_ns, uint64_t size, int rtt_divisor);
// -U: every sample in the order taken, none dropped, as perftest prints them ("#, usec", then
// "1, 2.34" ...), before the sorted summary.
std::string unsorted_lines(std::span<const int64_t> post_ns, int rtt_divisor);

struct BandwidthReport {
  uint64_t size = 0, iters = 0;
  double peak_mbps = 0, avg_mbps = 0, msg_rate_mpps = 0;
};

// posted_ns[i]: post time of message i; completed_ns[i]: completion time of message i, valid only
// where i is signalled (every cq_mod-th, (i + 1) % cq_mod == 0, and the last one).
BandwidthReport bandwidth_report(std::span<const int64_t> posted_ns, std::span<const int64_t> completed_ns,
                                 uint64_t size, uint32_t cq_mod);

// -b: perftest reports the sum of both sides' figures.
BandwidthReport sum_reports(const BandwidthReport& mine, const BandwidthReport& peer);

// --per-second: the messages completed in each whole second of the run (from the first post),
// counted at signalled completions, as bandwidth and message rate; a last partial second is left out.
struct SecondRate {
  uint64_t second = 0, messages = 0;
  double mbps = 0, mpps = 0;
};
std::vector<SecondRate> per_second_rates(std::span<const int64_t> posted_ns,
                                         std::span<const int64_t> completed_ns, uint64_t size,
                                         uint32_t cq_mod);

// Sizes for -a: 2, 4, 8, ... up to max_size (perftest's sweep), or just {size}.
std::vector<uint64_t> size_sweep(bool all, uint64_t size, uint64_t max_size);

// perftest-like text: a header once, then one line per size.
std::string latency_header();
std::string latency_line(const LatencyReport& r);
// gbits: --report_gbits, BW in Gb/s (10^9 bits) instead of MB/s (2^20 bytes).
std::string bandwidth_header(bool gbits = false);
std::string bandwidth_line(const BandwidthReport& r, bool gbits = false);

}  // namespace weft::cli
