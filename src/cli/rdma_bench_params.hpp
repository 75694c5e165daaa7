#pragma once
// What the two sides of `weft rdma bench` agree on before any verbs: both are started with their
// own flags (like perftest), send each other this record over the side channel, and refuse to
// start when the test differs, naming each field that does (a mismatch used to be a timeout).
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace weft::cli {

enum class BenchOp : uint8_t { send, write, write_imm, read, fetch_add, compare_swap };
enum class BenchTest : uint8_t { lat, bw };

std::optional<BenchOp> parse_bench_op(std::string_view s);
std::string_view to_string(BenchOp op);
// READ and atomics take one full round trip per sample; the others are ping-pongs (RTT/2).
inline bool is_one_sided_round(BenchOp op) { return op >= BenchOp::read; }
inline bool is_atomic(BenchOp op) { return op == BenchOp::fetch_add || op == BenchOp::compare_swap; }
// Operations whose receiver consumes a receive (and sees a completion).
inline bool needs_recv(BenchOp op) { return op == BenchOp::send || op == BenchOp::write_imm; }
// The transport's name as perftest's -c spells it.
inline std::string_view transport_name(bool ud, bool uc) { return ud ? "UD" : uc ? "UC" : "RC"; }

struct BenchParams {
  BenchOp op = BenchOp::send;
  BenchTest test = BenchTest::lat;
  bool ud = false;
  bool all_sizes = false;
  uint64_t size = 2;
  uint64_t iters = 1000;
  uint32_t duration_ms = 0;  // 0: iteration mode
  uint32_t tx_depth = 1;
  uint32_t cq_mod = 1;
  bool uc = false;             // -c UC: unreliable connected (SEND and WRITE only)
  bool bidirectional = false;  // -b: both sides stream at once (bandwidth only)
  bool warm_up = false;        // --perform_warm_up: tx_depth untimed WRs before the timed run
  uint32_t post_list = 1;      // -l: WRs handed to one ibv_post_send (bandwidth only)
  uint16_t num_qps = 1;        // -q: QPs streaming at once (bandwidth only; -n per QP)
  bool rdma_cm = false;        // -R: the test's QP comes from an rdma_cm connection (RC)
  bool operator==(const BenchParams&) const = default;
};

inline constexpr size_t kBenchParamsBytes = 48;
// -q: at most this many QPs (perftest allows 16384; each QP here costs a side-channel exchange).
inline constexpr uint16_t kBenchMaxQps = 1024;
std::array<uint8_t, kBenchParamsBytes> encode(const BenchParams& p);
Result<BenchParams> decode_bench_params(std::span<const uint8_t> bytes);
// "" when both sides run the same test; else "op: here write, peer send; size: ...".
std::string bench_mismatch(const BenchParams& mine, const BenchParams& peer);
// Checks one side's parameters on their own (sizes, UD only with SEND, atomics are 8 bytes...),
// with perftest's refusals of combinations (-b and -l only in bandwidth tests, UC without READ...).
Status validate(const BenchParams& p);

}  // namespace weft::cli
