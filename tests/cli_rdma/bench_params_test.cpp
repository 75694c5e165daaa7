// The parameter record both sides of `weft rdma bench` exchange: round trip, refusal of
// garbage, and the mismatch message that replaces a timeout.
#include <gtest/gtest.h>

#include "cli/rdma_bench_params.hpp"

using namespace weft::cli;

TEST(BenchParams, RoundTrip) {
  BenchParams p;
  p.op = BenchOp::compare_swap;
  p.test = BenchTest::bw;
  p.size = 8;
  p.iters = 123456;
  p.duration_ms = 2500;
  p.tx_depth = 64;
  p.cq_mod = 16;
  p.bidirectional = true;
  p.warm_up = true;
  p.post_list = 16;
  auto bytes = encode(p);
  auto back = decode_bench_params(bytes);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, p);
  BenchParams uc;
  uc.uc = true;
  uc.op = BenchOp::write;
  auto uc_back = decode_bench_params(encode(uc));
  ASSERT_TRUE(uc_back) << uc_back.error().message;
  EXPECT_EQ(*uc_back, uc);
  BenchParams cm;
  cm.rdma_cm = true;
  auto cm_back = decode_bench_params(encode(cm));
  ASSERT_TRUE(cm_back) << cm_back.error().message;
  EXPECT_TRUE(cm_back->rdma_cm);
}

// Both sides must set their QPs up the same way: a client with -R and a server without would
// wait for each other on different channels.
TEST(BenchParams, RdmaCmMismatchAndRefusals) {
  BenchParams a, b;
  b.rdma_cm = true;
  EXPECT_NE(bench_mismatch(a, b).find("rdma_cm (-R): here false, peer true"), std::string::npos)
      << bench_mismatch(a, b);
  BenchParams ud;
  ud.ud = true;
  ud.rdma_cm = true;
  EXPECT_TRUE(validate(ud));  // -R -c UD: rdma_cm's UDP port space
  BenchParams qps;
  qps.test = BenchTest::bw;
  qps.tx_depth = 8;
  qps.num_qps = 4;
  qps.rdma_cm = true;
  EXPECT_TRUE(validate(qps));  // -R -q 4: one rdma_cm connection per QP
  // A record from a peer that asks for -R with UC is refused on decoding, not run.
  BenchParams uc;
  uc.op = BenchOp::write;
  uc.uc = true;
  uc.rdma_cm = true;
  EXPECT_FALSE(decode_bench_params(encode(uc)));
}

TEST(BenchParams, MismatchOfPerftestFlags) {
  BenchParams a, b;
  a.test = b.test = BenchTest::bw;
  a.op = b.op = BenchOp::write;
  a.tx_depth = b.tx_depth = 8;
  b.uc = true;
  b.bidirectional = true;
  b.post_list = 4;
  auto m = bench_mismatch(a, b);
  EXPECT_NE(m.find("connection (-c): here RC, peer UC"), std::string::npos) << m;
  EXPECT_NE(m.find("bidirectional (-b)"), std::string::npos) << m;
  EXPECT_NE(m.find("post_list (-l): here 1, peer 4"), std::string::npos) << m;
}

TEST(BenchParams, RefusesWhatIsNotOurs) {
  BenchParams p;
  auto bytes = encode(p);
  auto bad = bytes;
  bad[0] ^= 0xff;
  EXPECT_NE(decode_bench_params(bad).error().message.find("not a weft rdma bench"), std::string::npos);
  bad = bytes;
  bad[4] = 9;  // version
  EXPECT_NE(decode_bench_params(bad).error().message.find("version 9"), std::string::npos);
  bad = bytes;
  bad[6] = 17;  // op
  EXPECT_FALSE(decode_bench_params(bad));
  EXPECT_FALSE(decode_bench_params(std::span(bytes).first(10)));
  // A peer's values go through the same checks as ours: no 4 GiB sizes from the wire.
  p.size = 1ull << 32;
  EXPECT_NE(decode_bench_params(encode(p)).error().message.find("--size"), std::string::npos);
}

TEST(BenchParams, MismatchNamesEachField) {
  BenchParams a, b;
  EXPECT_EQ(bench_mismatch(a, b), "");
  b.op = BenchOp::write;
  b.size = 64;
  auto m = bench_mismatch(a, b);
  EXPECT_NE(m.find("op: here send, peer write"), std::string::npos) << m;
  EXPECT_NE(m.find("size: here 2, peer 64"), std::string::npos) << m;
  // With -a on both sides the single size does not matter.
  a.all_sizes = b.all_sizes = true;
  b.op = a.op;
  EXPECT_EQ(bench_mismatch(a, b), "");
}

TEST(BenchParams, Validation) {
  BenchParams p;
  EXPECT_TRUE(validate(p));
  p.ud = true;
  p.op = BenchOp::write;
  EXPECT_FALSE(validate(p));
  p.ud = false;
  p.op = BenchOp::fetch_add;
  p.size = 16;
  EXPECT_NE(validate(p).error().message.find("8 bytes"), std::string::npos);
  p.size = 8;
  EXPECT_TRUE(validate(p));
  p.tx_depth = 4;
  p.cq_mod = 5;
  EXPECT_FALSE(validate(p));
  p.cq_mod = 4;
  p.iters = 2;
  EXPECT_FALSE(validate(p));
}

TEST(BenchParams, OpNames) {
  EXPECT_EQ(parse_bench_op("faa"), BenchOp::fetch_add);
  EXPECT_EQ(parse_bench_op("cas"), BenchOp::compare_swap);
  EXPECT_EQ(parse_bench_op("write_imm"), BenchOp::write_imm);
  EXPECT_EQ(parse_bench_op("write_with_imm"), BenchOp::write_imm);
  EXPECT_FALSE(parse_bench_op("atomic"));
  EXPECT_EQ(to_string(BenchOp::read), "read");
}
