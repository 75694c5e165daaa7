#include "cli/rdma_bench_stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace weft::cli {

namespace {
constexpr size_t kMeasureTail = 2;  // perftest's LAT_MEASURE_TAIL: the largest samples dropped
}

LatencyReport latency_report(std::span<const int64_t> post_ns, uint64_t size, int rtt_divisor) {
  LatencyReport r;
  r.size = size;
  r.iters = post_ns.size();
  if (post_ns.size() < 2 + kMeasureTail) return r;
  std::vector<int64_t> delta(post_ns.size() - 1);
  for (size_t i = 0; i + 1 < post_ns.size(); ++i) delta[i] = post_ns[i + 1] - post_ns[i];
  std::sort(delta.begin(), delta.end());
  const size_t n = delta.size() - kMeasureTail;
  const double div = 1000.0 * rtt_divisor;
  r.sorted_us.resize(n);
  for (size_t i = 0; i < n; ++i) r.sorted_us[i] = static_cast<double>(delta[i]) / div;
  // perftest's get_median: the middle one, or the mean of the two middle ones.
  r.typical_us = n % 2 ? r.sorted_us[n / 2] : (r.sorted_us[n / 2 - 1] + r.sorted_us[n / 2]) / 2;
  double sum = 0;
  for (double v : r.sorted_us) sum += v;
  r.avg_us = sum / static_cast<double>(n);
  double var = 0;
  for (double v : r.sorted_us) var += (v - r.avg_us) * (v - r.avg_us);
  // (perftest truncates each deviation to an int of microseconds; we do not.)
  r.stdev_us = std::sqrt(var / static_cast<double>(n));
  r.min_us = r.sorted_us.front();
  // perftest indexes the sorted samples past the kept ones: t_max is delta[n] (the second
  // largest sample), p99 and p99.9 are delta[ceil(n * q)].
  auto raw = [&](size_t k) { return static_cast<double>(delta[std::min(k, delta.size() - 1)]) / div; };
  r.max_us = raw(n);
  r.p90_us = raw(static_cast<size_t>(std::ceil(static_cast<double>(n) * 0.9)));
  r.p99_us = raw(static_cast<size_t>(std::ceil(static_cast<double>(n) * 0.99)));
  r.p999_us = raw(static_cast<size_t>(std::ceil(static_cast<double>(n) * 0.999)));
  return r;
}

std::string unsorted_lines(std::span<const int64_t> post_ns, int rtt_divisor) {
  std::string out = "#, usec\n";
  const double div = 1000.0 * rtt_divisor;
  for (size_t i = 0; i + 1 < post_ns.size(); ++i)
    out += fmt::format("{}, {:g}\n", i + 1, static_cast<double>(post_ns[i + 1] - post_ns[i]) / div);
  return out;
}

BandwidthReport sum_reports(const BandwidthReport& a, const BandwidthReport& b) {
  BandwidthReport r = a;
  r.peak_mbps += b.peak_mbps;
  r.avg_mbps += b.avg_mbps;
  r.msg_rate_mpps += b.msg_rate_mpps;
  return r;
}

std::vector<SecondRate> per_second_rates(std::span<const int64_t> posted_ns,
                                         std::span<const int64_t> completed_ns, uint64_t size,
                                         uint32_t cq_mod) {
  std::vector<SecondRate> out;
  const size_t n = std::min(posted_ns.size(), completed_ns.size());
  if (n == 0 || cq_mod == 0) return out;
  const int64_t start = posted_ns[0];
  uint64_t done_before = 0;  // messages completed before the current second
  uint64_t done = 0;         // messages completed so far
  uint64_t second = 0;
  auto close_second = [&] {
    const uint64_t m = done - done_before;
    out.push_back({second, m, static_cast<double>(m * size) / 1048576.0, static_cast<double>(m) / 1e6});
    done_before = done;
    ++second;
  };
  for (size_t i = 0; i < n; ++i) {
    const bool signalled = (i + 1) % cq_mod == 0 || i + 1 == n;
    if (!signalled) continue;
    const int64_t t = completed_ns[i] - start;
    while (t >= static_cast<int64_t>(second + 1) * 1'000'000'000) close_second();
    done = i + 1;
  }
  return out;
}

BandwidthReport bandwidth_report(std::span<const int64_t> posted_ns, std::span<const int64_t> completed_ns,
                                 uint64_t size, uint32_t cq_mod) {
  BandwidthReport r;
  r.size = size;
  const size_t n = std::min(posted_ns.size(), completed_ns.size());
  r.iters = n;
  if (n == 0 || cq_mod == 0) return r;
  const double total_ns = static_cast<double>(completed_ns[n - 1] - posted_ns[0]);
  if (total_ns <= 0) return r;
  r.avg_mbps = static_cast<double>(size) * static_cast<double>(n) * 1e9 / (total_ns * 1048576.0);
  r.msg_rate_mpps = static_cast<double>(n) * 1e9 / (total_ns * 1e6);
  // Peak: the shortest time per message over any stretch [i, j] with j a signalled message.
  // Quadratic like perftest's; past 100k messages only every cq_mod-th start is tried.
  const size_t step_i = n > 100'000 ? cq_mod : 1;
  double best = total_ns / static_cast<double>(n);
  auto try_span = [&](size_t i, size_t j) {
    const double t = static_cast<double>(completed_ns[j] - posted_ns[i]) / static_cast<double>(j - i + 1);
    if (t > 0 && t < best) best = t;
  };
  for (size_t i = 0; i < n; i += step_i) {
    const size_t first = ((i + 1 + cq_mod - 1) / cq_mod) * cq_mod - 1;
    for (size_t j = first; j < n; j += cq_mod) try_span(i, j);
    if (n % cq_mod) try_span(i, n - 1);
  }
  r.peak_mbps = static_cast<double>(size) * 1e9 / (best * 1048576.0);
  return r;
}

std::vector<uint64_t> size_sweep(bool all, uint64_t size, uint64_t max_size) {
  if (!all) return {size};
  std::vector<uint64_t> v;
  for (uint64_t s = 2; s <= max_size; s *= 2) v.push_back(s);
  return v;
}

std::string latency_header() {
  return " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec] "
         "  "
         "99% percentile[usec]   99.9% percentile[usec]\n";
}

std::string latency_line(const LatencyReport& r) {
  return fmt::format(" {:<7} {:<10} {:<14.2f} {:<14.2f} {:<16.2f} {:<14.2f} {:<16.2f} {:<23.2f} {:.2f}\n",
                     r.size, r.iters, r.min_us, r.max_us, r.typical_us, r.avg_us, r.stdev_us, r.p99_us,
                     r.p999_us);
}

std::string bandwidth_header(bool gbits) {
  return gbits ? " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
               : " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n";
}

std::string bandwidth_line(const BandwidthReport& r, bool gbits) {
  const double peak = gbits ? r.peak_mbps * 1048576.0 * 8 / 1e9 : r.peak_mbps;
  const double avg = gbits ? r.avg_mbps * 1048576.0 * 8 / 1e9 : r.avg_mbps;
  return fmt::format(" {:<10} {:<14} {:<18.2f} {:<20.2f} {:.6f}\n", r.size, r.iters, peak, avg,
                     r.msg_rate_mpps);
}

}  // namespace weft::cli
