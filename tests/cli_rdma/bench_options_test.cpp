// `weft rdma bench`'s command line as perftest spells it: every perftest flag is parsed into its
// meaning, bad values and ranges are refused by CLI11 (a usage error naming the flag), bad
// combinations by plan_bench (the same refusals perftest makes), and perftest's silent clamps are
// made and said.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/rdma_bench_options.hpp"
#include "cli/rdma_bench_stats.hpp"

using namespace weft::cli;

namespace {

struct Parsed {
  bool parsed = false;
  std::string parse_error;
  BenchOptions o;
};

// Parses "rdma bench ARGS" the way the command does (its own CLI::App, the same options).
Parsed parse(std::vector<std::string> args) {
  Parsed p;
  CLI::App app{"bench"};
  add_bench_options(&app, p.o);
  std::vector<std::string> rev(args.rbegin(), args.rend());
  try {
    app.parse(rev);
    p.parsed = true;
  } catch (const CLI::ParseError& e) {
    p.parse_error = e.what();
  }
  return p;
}

// Parses and plans; the plan's error (or "") and the plan.
std::string plan_error(std::vector<std::string> args) {
  auto p = parse(std::move(args));
  if (!p.parsed) return "parse: " + p.parse_error;
  auto plan = plan_bench(p.o);
  return plan ? "" : plan.error().message;
}

BenchPlan plan_of(std::vector<std::string> args) {
  auto p = parse(std::move(args));
  EXPECT_TRUE(p.parsed) << p.parse_error;
  auto plan = plan_bench(p.o);
  EXPECT_TRUE(plan) << plan.error().message;
  return plan ? *plan : BenchPlan{};
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(BenchOptions, PerftestDefaults) {
  auto lat = plan_of({"--client", "h"});
  EXPECT_EQ(lat.params.size, 2u);
  EXPECT_EQ(lat.params.iters, 1000u);
  EXPECT_EQ(lat.params.tx_depth, 1u);
  EXPECT_EQ(lat.params.cq_mod, 1u);
  EXPECT_EQ(lat.rx_depth, 512u);
  EXPECT_EQ(lat.gid_index, -1);
  EXPECT_EQ(lat.ib_port, 1);
  EXPECT_EQ(lat.mtu, 0u);
  EXPECT_TRUE(lat.notes.empty());
  auto bw = plan_of({"--test", "bw", "--op", "write"});
  EXPECT_EQ(bw.params.size, 65536u);
  EXPECT_EQ(bw.params.iters, 5000u);
  EXPECT_EQ(bw.params.tx_depth, 128u);
  EXPECT_EQ(bw.params.cq_mod, 100u);
  EXPECT_EQ(bw.rx_depth, 1u);  // WRITE posts no receives
}

TEST(BenchOptions, EachPerftestFlagIsParsedIntoItsMeaning) {
  auto p = plan_of({"--test",
                    "bw",
                    "--op",
                    "write",
                    "-b",
                    "--report_gbits",
                    "--perform_warm_up",
                    "-l",
                    "4",
                    "-x",
                    "3",
                    "-i",
                    "2",
                    "-m",
                    "2048",
                    "-S",
                    "5",
                    "-T",
                    "96",
                    "-c",
                    "UC"});
  EXPECT_TRUE(p.params.bidirectional);
  EXPECT_TRUE(p.report_gbits);
  EXPECT_TRUE(p.params.warm_up);
  EXPECT_EQ(p.params.post_list, 4u);
  EXPECT_EQ(p.params.cq_mod, 4u);  // perftest: CQ moderation follows the post list unless -Q
  EXPECT_EQ(p.gid_index, 3);
  EXPECT_EQ(p.ib_port, 2);
  EXPECT_EQ(p.mtu, 2048u);
  EXPECT_EQ(p.sl, 5);
  EXPECT_EQ(p.traffic_class, 96);
  EXPECT_TRUE(p.params.uc);
  EXPECT_FALSE(p.params.ud);
  auto lat = plan_of({"--op", "send", "-U", "-r", "64"});
  EXPECT_TRUE(lat.unsorted);
  EXPECT_EQ(lat.rx_depth, 64u);
  auto rd = plan_of({"--op", "read", "-o", "4", "--test", "bw", "-q", "4"});
  EXPECT_EQ(rd.out_reads, 4);
  EXPECT_EQ(rd.params.num_qps, 4u);
  // Long spellings as perftest's long options.
  auto l = plan_of({"--op", "write", "--test", "bw", "--bidirectional", "--post_list", "2", "--gid-index",
                    "1", "--ib-port", "1", "--mtu", "1024", "--sl", "1", "--tos", "7", "--connection", "rc"});
  EXPECT_TRUE(l.params.bidirectional);
  EXPECT_EQ(l.params.post_list, 2u);
  EXPECT_EQ(l.traffic_class, 7);
  auto dur = plan_of({"--op", "write", "--test", "bw", "-D", "3", "--per-second"});
  EXPECT_TRUE(dur.per_second);
  EXPECT_EQ(dur.params.duration_ms, 3000u);
}

TEST(BenchOptions, RangesAreUsageErrorsNamingTheFlag) {
  struct Case {
    std::vector<std::string> args;
    const char* flag;
  };
  const std::vector<Case> cases = {
      {{"-m", "1500"}, "--mtu"},      {{"-S", "16"}, "--sl"},          {{"-T", "256"}, "--tos"},
      {{"-x", "256"}, "--gid-index"}, {{"-x", "-1"}, "--gid-index"},   {{"-i", "0"}, "--ib-port"},
      {{"-r", "0"}, "--rx-depth"},    {{"-r", "16385"}, "--rx-depth"}, {{"-l", "0"}, "--post_list"},
      {{"-o", "0"}, "--outs"},        {{"-c", "XRC"}, "--connection"}, {{"-t", "0"}, "--tx-depth"},
      {{"-q", "0"}, "--qps"},         {{"-q", "1025"}, "--qps"},
  };
  for (const auto& c : cases) {
    auto p = parse(c.args);
    EXPECT_FALSE(p.parsed) << c.args[0];
    EXPECT_TRUE(has(p.parse_error, c.flag)) << c.args[0] << ": " << p.parse_error;
  }
}

TEST(BenchOptions, BadCombinationsAreRefusedLikePerftest) {
  EXPECT_TRUE(has(plan_error({"-b"}), "-b"));                  // latency
  EXPECT_TRUE(has(plan_error({"-q", "2"}), "-q"));             // latency
  EXPECT_TRUE(has(plan_error({"--test", "bw", "-U"}), "-U"));  // bandwidth
  EXPECT_TRUE(has(plan_error({"--report_gbits"}), "--report_gbits"));
  EXPECT_TRUE(has(plan_error({"-l", "2"}), "-l"));  // post list in a latency test
  EXPECT_TRUE(has(plan_error({"--test", "bw", "--op", "write", "-l", "3", "-n", "100"}), "multiple of -l"));
  EXPECT_TRUE(has(plan_error({"--test", "bw", "--op", "write", "-l", "4", "-Q", "3", "-n", "100"}),
                  "multiple of -Q"));
  EXPECT_TRUE(has(plan_error({"--op", "write", "-o", "4"}), "-o"));  // outstanding reads on WRITE
  EXPECT_TRUE(has(plan_error({"--op", "read", "-r", "4"}), "-r"));   // rx depth on READ
  EXPECT_TRUE(has(plan_error({"--op", "read", "-c", "UC"}), "UC"));  // UC has no READ
  EXPECT_TRUE(has(plan_error({"--op", "faa", "-c", "UC"}), "UC"));
  EXPECT_TRUE(has(plan_error({"--op", "write", "-c", "UD"}), "UD"));
  EXPECT_TRUE(has(plan_error({"--qp", "rc", "-c", "UD"}), "--qp"));  // two transports
  EXPECT_TRUE(has(plan_error({"--perform_warm_up", "--op", "write"}), "--perform_warm_up"));  // latency
  EXPECT_TRUE(has(plan_error({"--perform_warm_up", "--test", "bw"}), "--perform_warm_up"));   // SEND
  EXPECT_TRUE(has(plan_error({"--per-second", "--test", "bw"}), "-D"));
  EXPECT_TRUE(has(plan_error({"--use-srq", "--op", "write"}), "--use-srq"));
  EXPECT_TRUE(has(plan_error({"--use-srq", "--test", "bw", "-q", "8", "-r", "4"}), "-q 8"));
  EXPECT_TRUE(plan_of({"--use-srq", "--test", "bw", "-q", "4"}).use_srq);
  EXPECT_EQ(plan_error({"--test", "bw", "-b"}), "");  // SEND both ways
  // The same transport in both spellings is fine.
  EXPECT_EQ(plan_error({"--qp", "uc", "-c", "UC", "--op", "write"}), "");
}

// -R (rdma_cm), spelled as perftest spells it: parsed into the record both sides agree on; what
// weft's rdma_cm set-up cannot do, and the flags whose choice rdma_cm makes itself, are usage
// errors naming the flag instead of being ignored.
TEST(BenchOptions, RdmaCmFlag) {
  for (const char* spelling : {"-R", "--rdma_cm", "--rdma-cm"}) {
    auto p = plan_of({spelling, "--op", "read", "--test", "bw"});
    EXPECT_TRUE(p.params.rdma_cm) << spelling;
    EXPECT_TRUE(p.rdma_cm) << spelling;
  }
  EXPECT_FALSE(plan_of({"--op", "write"}).params.rdma_cm);
  auto tos = plan_of({"-R", "-T", "32"});  // perftest's -T belongs with -R
  EXPECT_EQ(tos.traffic_class, 32);
  EXPECT_TRUE(has(plan_error({"-R", "-c", "UC"}), "UC is not supported in librdmacm"));  // perftest's words
  EXPECT_TRUE(has(plan_error({"-R", "-x", "1"}), "-x"));
  EXPECT_TRUE(has(plan_error({"-R", "-i", "2"}), "-i"));
  EXPECT_TRUE(has(plan_error({"-R", "-m", "1024"}), "-m"));
  EXPECT_TRUE(has(plan_error({"-R", "-S", "3"}), "-S"));
  EXPECT_TRUE(has(plan_error({"-R", "--use-srq"}), "--use-srq"));
  // What -R does take: every op, latency and bandwidth, -q (a connection per QP), -b, -l, -o, -r,
  // -t, -Q, -I, -D.
  EXPECT_EQ(plan_error({"-R", "--op", "send", "--test", "bw", "-q", "4", "-b"}), "");
  EXPECT_EQ(plan_error({"-R", "-c", "UD", "--test", "bw", "-q", "2", "-s", "1024"}), "");
  EXPECT_EQ(plan_error({"-R", "--op", "write_imm", "--test", "bw", "-b", "-r", "64", "-l", "4", "-Q", "4"}),
            "");
  EXPECT_EQ(plan_error({"-R", "--op", "cas", "--test", "bw", "-o", "2", "-t", "16"}), "");
  EXPECT_EQ(plan_error({"-R", "--op", "write", "-I", "0", "-D", "1"}), "");
}

TEST(BenchOptions, ClampsLikePerftestAndSaysSo) {
  // -n below the tx depth: perftest lowers tx_depth to -n; weft does the same and notes it.
  auto p = plan_of({"--test", "bw", "--op", "write", "-n", "10"});
  EXPECT_EQ(p.params.tx_depth, 10u);
  EXPECT_EQ(p.params.cq_mod, 10u);  // min(100, tx_depth)
  ASSERT_FALSE(p.notes.empty());
  EXPECT_TRUE(has(p.notes[0], "tx_depth 128 -> 10")) << p.notes[0];
  // A CQ moderation above the (clamped) tx depth is lowered to it, where weft used to refuse it.
  p = plan_of({"--test", "bw", "--op", "write", "-n", "20", "-Q", "50"});
  EXPECT_EQ(p.params.tx_depth, 20u);
  EXPECT_EQ(p.params.cq_mod, 20u);
  EXPECT_EQ(p.notes.size(), 2u);
  p = plan_of({"--test", "bw", "--op", "write", "-t", "8", "-Q", "16"});
  EXPECT_EQ(p.params.cq_mod, 8u);
  // rx depth above -n: lowered (said when the user asked for it).
  p = plan_of({"--op", "send", "-n", "50", "-r", "100"});
  EXPECT_EQ(p.rx_depth, 50u);
  EXPECT_TRUE(has(p.notes.back(), "rx_depth 100 -> 50"));
  // Duration mode: nothing is clamped to -n.
  p = plan_of({"--test", "bw", "--op", "write", "-n", "10", "-D", "1"});
  EXPECT_EQ(p.params.tx_depth, 128u);
  EXPECT_TRUE(p.notes.empty());
}

TEST(BenchStats, UnsortedSamplesInOrderTaken) {
  const std::vector<int64_t> posted = {0, 4000, 6000, 16000};
  EXPECT_EQ(unsorted_lines(posted, 2), "#, usec\n1, 2\n2, 1\n3, 5\n");
}

TEST(BenchStats, GbitsAndBidirectionalSum) {
  EXPECT_NEAR(mib_to_gbits(119.209), 1.0, 1e-4);
  BandwidthReport a{.size = 64, .iters = 10, .peak_mbps = 10, .avg_mbps = 8, .msg_rate_mpps = 0.5};
  BandwidthReport b{.size = 64, .iters = 10, .peak_mbps = 12, .avg_mbps = 6, .msg_rate_mpps = 0.25};
  auto s = sum_reports(a, b);
  EXPECT_DOUBLE_EQ(s.peak_mbps, 22);
  EXPECT_DOUBLE_EQ(s.avg_mbps, 14);
  EXPECT_DOUBLE_EQ(s.msg_rate_mpps, 0.75);
  EXPECT_TRUE(has(bandwidth_header(true), "Gb/sec"));
  EXPECT_TRUE(has(bandwidth_line(a, true), "0.08"));  // 8 MiB/s = 0.067 Gb/s peak 0.08
}

TEST(BenchStats, PerSecondRates) {
  // 6 messages of 1 MiB, signalled every 2nd: completions at 0.5 s, 1.5 s and 2.5 s.
  const std::vector<int64_t> posted = {0, 0, 0, 0, 0, 0};
  const std::vector<int64_t> completed = {0, 500'000'000, 0, 1'500'000'000, 0, 2'500'000'000};
  auto r = per_second_rates(posted, completed, 1 << 20, 2);
  ASSERT_EQ(r.size(), 2u);  // the third second is not whole
  EXPECT_EQ(r[0].messages, 2u);
  EXPECT_DOUBLE_EQ(r[0].mbps, 2.0);
  EXPECT_EQ(r[1].messages, 2u);
  EXPECT_DOUBLE_EQ(r[1].mpps, 2e-6);
}

TEST(BenchStats, LatencyPercentiles) {
  std::vector<int64_t> posted(1003);
  for (size_t i = 0; i < posted.size(); ++i) posted[i] = static_cast<int64_t>(i * (i + 1) / 2) * 1000;
  auto r = latency_report(posted, 2, 1);
  // Deltas 1..1002 us; 1000 kept; p90 is delta[900] = 901 us, typical the median 500.5.
  EXPECT_DOUBLE_EQ(r.p90_us, 901);
  EXPECT_DOUBLE_EQ(r.typical_us, 500.5);
  EXPECT_LT(r.p90_us, r.p99_us);
}
