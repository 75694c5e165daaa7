// The figures of `weft rdma bench`, checked against values worked out by hand from perftest's
// definitions (perftest_parameters.c: print_report_lat, print_report_bw).
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "cli/rdma_bench_stats.hpp"

using namespace weft::cli;

namespace {

// Post times whose consecutive differences are `deltas` (ns).
std::vector<int64_t> posts(const std::vector<int64_t>& deltas) {
  std::vector<int64_t> p{1000};
  for (auto d : deltas) p.push_back(p.back() + d);
  return p;
}

}  // namespace

TEST(BenchLatency, PingPongHalvesTheRoundTripAndDropsTheTwoLargest) {
  // 10 deltas of 2..20 us (shuffled) plus two huge ones that perftest's tail drop removes.
  std::vector<int64_t> d = {8000, 2000, 20000, 4000, 6000, 18000, 10000, 12000, 16000, 14000, 900000, 800000};
  auto r = latency_report(posts(d), 64, 2);
  EXPECT_EQ(r.size, 64u);
  EXPECT_EQ(r.iters, 13u);
  ASSERT_EQ(r.sorted_us.size(), 10u);
  EXPECT_DOUBLE_EQ(r.min_us, 1.0);      // 2 us / 2
  EXPECT_DOUBLE_EQ(r.typical_us, 5.5);  // median of 1..10 step 1: (5 + 6) / 2
  EXPECT_DOUBLE_EQ(r.avg_us, 5.5);
  EXPECT_DOUBLE_EQ(r.max_us, 400.0);         // perftest's delta[n]: the second largest sample
  EXPECT_DOUBLE_EQ(r.p99_us, 400.0);         // delta[ceil(10 * 0.99)] = delta[10]
  EXPECT_NEAR(r.stdev_us, 2.8722813, 1e-6);  // population stdev of 1..10
}

TEST(BenchLatency, ReadAndAtomicsKeepTheFullRoundTrip) {
  std::vector<int64_t> d(101, 3000);
  d[50] = 5000;
  auto r = latency_report(posts(d), 8, 1);
  EXPECT_DOUBLE_EQ(r.min_us, 3.0);
  EXPECT_DOUBLE_EQ(r.typical_us, 3.0);
  EXPECT_EQ(r.sorted_us.size(), 99u);  // 101 samples, the two largest dropped
}

TEST(BenchLatency, OddCountMedianIsTheMiddleSample) {
  auto r = latency_report(posts({1000, 3000, 2000, 100000, 100000}), 2, 1);
  ASSERT_EQ(r.sorted_us.size(), 3u);
  EXPECT_DOUBLE_EQ(r.typical_us, 2.0);
}

TEST(BenchLatency, TooFewSamplesGiveAnEmptyReport) {
  auto r = latency_report(posts({1000, 2000}), 2, 2);
  EXPECT_TRUE(r.sorted_us.empty());
  EXPECT_EQ(r.typical_us, 0.0);
}

TEST(BenchBandwidth, AverageAndRateOverFirstPostToLastCompletion) {
  // 4 messages of 1 MiB, posted at 0,1,2,3 ms; signalled every 2nd: completions at 4 ms and 8 ms.
  std::vector<int64_t> posted = {0, 1'000'000, 2'000'000, 3'000'000};
  std::vector<int64_t> done = {0, 4'000'000, 0, 8'000'000};
  auto r = bandwidth_report(posted, done, 1 << 20, 2);
  EXPECT_EQ(r.iters, 4u);
  EXPECT_DOUBLE_EQ(r.avg_mbps, 500.0);  // 4 MiB in 8 ms
  EXPECT_DOUBLE_EQ(r.msg_rate_mpps, 0.0005);
  // Best stretch: messages 2..3 took (8 - 2) / 2 = 3 ms each; 0..1 took 4/2 = 2 ms each; 1..1: 3 ms.
  EXPECT_DOUBLE_EQ(r.peak_mbps, 500.0);  // 1 MiB per 2 ms
}

TEST(BenchBandwidth, LastMessageCountsWhenNotOnASignalBoundary) {
  std::vector<int64_t> posted = {0, 100, 200};
  std::vector<int64_t> done = {0, 1000, 1100};  // cq_mod 2: index 1 and the last (2) are stamped
  auto r = bandwidth_report(posted, done, 1000, 2);
  // Stretches: [0,1] 1000/2, [0,2] 1100/3 (the best), [1,1] 900, [1,2] 1000/2, [2,2] 900 ns each.
  EXPECT_DOUBLE_EQ(r.peak_mbps, 1000 * 1e9 / ((1100.0 / 3) * 1048576.0));
  EXPECT_NEAR(r.avg_mbps, 3000 * 1e9 / (1100.0 * 1048576.0), 1e-9);
}

TEST(BenchSizes, SweepDoublesFromTwoToTheMax) {
  auto v = size_sweep(true, 0, 4096);
  ASSERT_EQ(v.size(), 12u);  // 2^1 .. 2^12
  EXPECT_EQ(v.front(), 2u);
  EXPECT_EQ(v.back(), 4096u);
  EXPECT_EQ(size_sweep(false, 77, 4096), std::vector<uint64_t>{77});
}

TEST(BenchText, LinesHaveTheirNumbers) {
  LatencyReport r;
  r.size = 2;
  r.iters = 1000;
  r.typical_us = 12.345;
  EXPECT_NE(latency_line(r).find("12.35"), std::string::npos);
  EXPECT_NE(latency_header().find("t_typical[usec]"), std::string::npos);
  BandwidthReport b;
  b.size = 65536;
  b.avg_mbps = 25.5;
  EXPECT_NE(bandwidth_line(b).find("25.50"), std::string::npos);
  EXPECT_NE(bandwidth_header().find("MsgRate[Mpps]"), std::string::npos);
}
