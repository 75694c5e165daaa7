#include "cli/rdma_bench_params.hpp"

#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "base/little_endian.hpp"
#include "cli/rdma_args.hpp"

namespace weft::cli {

namespace {

constexpr uint32_t kMagic = 0x4e454257;  // "WBEN"
constexpr uint16_t kVersion = 3;         // 2: UC, -b, --perform_warm_up, -l, -q; 3: -R
constexpr std::array<std::string_view, 6> kOpNames = {"send", "write",     "write_imm",
                                                      "read", "fetch_add", "compare_swap"};

// Little-endian on the wire, whatever the host; each field moves the cursor past itself.
template <typename T>
void put(uint8_t*& p, T v) {
  le::store<T>(p, v);
  p += sizeof(T);
}
template <typename T>
T get(const uint8_t*& p) {
  const T v = le::load<T>(p);
  p += sizeof(T);
  return v;
}

}  // namespace

std::optional<BenchOp> parse_bench_op(std::string_view s) {
  if (s == "faa" || s == "atomic_faa") return BenchOp::fetch_add;
  if (s == "cas" || s == "atomic_cas") return BenchOp::compare_swap;
  if (s == "write_with_imm") return BenchOp::write_imm;
  for (size_t i = 0; i < kOpNames.size(); ++i)
    if (s == kOpNames[i]) return static_cast<BenchOp>(i);
  return std::nullopt;
}

std::string_view to_string(BenchOp op) { return kOpNames[static_cast<size_t>(op)]; }

std::array<uint8_t, kBenchParamsBytes> encode(const BenchParams& b) {
  std::array<uint8_t, kBenchParamsBytes> out{};
  uint8_t* p = out.data();
  put<uint32_t>(p, kMagic);
  put<uint16_t>(p, kVersion);
  put<uint8_t>(p, static_cast<uint8_t>(b.op));
  put<uint8_t>(p, static_cast<uint8_t>(b.test));
  put<uint8_t>(p, b.ud);
  put<uint8_t>(p, b.all_sizes);
  put<uint16_t>(p, b.num_qps);
  put<uint64_t>(p, b.size);
  put<uint64_t>(p, b.iters);
  put<uint32_t>(p, b.duration_ms);
  put<uint32_t>(p, b.tx_depth);
  put<uint32_t>(p, b.cq_mod);
  put<uint8_t>(p, b.uc);
  put<uint8_t>(p, b.bidirectional);
  put<uint8_t>(p, b.warm_up);
  put<uint8_t>(p, b.rdma_cm);
  put<uint32_t>(p, b.post_list);
  return out;
}

Result<BenchParams> decode_bench_params(std::span<const uint8_t> bytes) {
  if (bytes.size() != kBenchParamsBytes)
    return fail("bench parameters: {} bytes, expected {}", bytes.size(), kBenchParamsBytes);
  const uint8_t* p = bytes.data();
  if (get<uint32_t>(p) != kMagic) return fail("bench parameters: the peer is not a weft rdma bench");
  if (uint16_t v = get<uint16_t>(p); v != kVersion)
    return fail("bench parameters: the peer speaks version {}, we speak {}", v, kVersion);
  BenchParams b;
  const uint8_t op = get<uint8_t>(p), test = get<uint8_t>(p), ud = get<uint8_t>(p), all = get<uint8_t>(p);
  if (op >= kOpNames.size() || test > 1 || ud > 1 || all > 1)
    return fail("bench parameters: bad op/test/flags ({} {} {} {})", op, test, ud, all);
  b.op = static_cast<BenchOp>(op);
  b.test = static_cast<BenchTest>(test);
  b.ud = ud;
  b.all_sizes = all;
  b.num_qps = get<uint16_t>(p);
  b.size = get<uint64_t>(p);
  b.iters = get<uint64_t>(p);
  b.duration_ms = get<uint32_t>(p);
  b.tx_depth = get<uint32_t>(p);
  b.cq_mod = get<uint32_t>(p);
  const uint8_t uc = get<uint8_t>(p), bidir = get<uint8_t>(p), warm = get<uint8_t>(p), cm = get<uint8_t>(p);
  if (uc > 1 || bidir > 1 || warm > 1 || cm > 1)
    return fail("bench parameters: bad flags ({} {} {} {})", uc, bidir, warm, cm);
  b.uc = uc;
  b.rdma_cm = cm;
  b.bidirectional = bidir;
  b.warm_up = warm;
  b.post_list = get<uint32_t>(p);
  if (auto s = validate(b); !s) return fail("bench parameters from the peer: {}", s.error().message);
  return b;
}

std::string bench_mismatch(const BenchParams& a, const BenchParams& b) {
  std::vector<std::string> d;
  auto cmp = [&](const char* name, auto x, auto y) {
    if (x != y) d.push_back(fmt::format("{}: here {}, peer {}", name, x, y));
  };
  cmp("op", to_string(a.op), to_string(b.op));
  cmp("test", a.test == BenchTest::lat ? "lat" : "bw", b.test == BenchTest::lat ? "lat" : "bw");
  cmp("connection (-c)", transport_name(a.ud, a.uc), transport_name(b.ud, b.uc));
  cmp("all sizes (-a)", a.all_sizes, b.all_sizes);
  if (!a.all_sizes || !b.all_sizes) cmp("size", a.size, b.size);
  cmp("iters", a.iters, b.iters);
  cmp("duration_ms", a.duration_ms, b.duration_ms);
  cmp("tx_depth", a.tx_depth, b.tx_depth);
  cmp("cq_mod", a.cq_mod, b.cq_mod);
  cmp("bidirectional (-b)", a.bidirectional, b.bidirectional);
  cmp("perform_warm_up", a.warm_up, b.warm_up);
  cmp("post_list (-l)", a.post_list, b.post_list);
  cmp("qps (-q)", a.num_qps, b.num_qps);
  cmp("rdma_cm (-R)", a.rdma_cm, b.rdma_cm);
  std::string out;
  for (auto& s : d) out += (out.empty() ? "" : "; ") + s;
  return out;
}

Status validate(const BenchParams& b) {
  if (b.ud && b.op != BenchOp::send) return fail("UD carries only SEND (got {})", to_string(b.op));
  if (is_atomic(b.op) && !b.all_sizes && b.size != 8)
    return fail("atomics move 8 bytes (--size 8, got {})", b.size);
  if (b.size < 1 || b.size > kRdmaMaxMessage) return fail("--size must be 1-{}", kRdmaMaxMessage);
  // Ping-pongs carry a sequence byte and a "last" byte in each message.
  if (b.test == BenchTest::lat && !is_one_sided_round(b.op) && !b.all_sizes && b.size < 2)
    return fail("{} latency needs --size >= 2", to_string(b.op));
  if (b.iters < 5 || b.iters > 100'000'000) return fail("--iters must be 5-100000000");
  if (b.duration_ms > 3'600'000) return fail("--duration must be at most 3600 s");
  if (b.tx_depth < 1 || b.tx_depth > 16384) return fail("--tx-depth must be 1-16384");
  if (b.cq_mod < 1 || b.cq_mod > b.tx_depth) return fail("--cq-mod must be 1-tx_depth ({})", b.tx_depth);
  const bool bw = b.test == BenchTest::bw;
  if (b.ud && b.uc) return fail("-c takes one of RC, UC, UD");
  // UC has no responder resources: no READ and no atomics (perftest refuses them too).
  if (b.uc && b.op != BenchOp::send && b.op != BenchOp::write && b.op != BenchOp::write_imm)
    return fail("-c UC carries SEND and WRITE only (got {})", to_string(b.op));
  if (b.bidirectional && !bw) return fail("-b (bidirectional) is only available in bandwidth tests");
  if (b.warm_up && (!bw || needs_recv(b.op)))
    return fail("--perform_warm_up is only available in WRITE, READ and atomic bandwidth tests");
  if (b.num_qps < 1 || b.num_qps > kBenchMaxQps) return fail("-q (QPs) must be 1-{}", kBenchMaxQps);
  if (b.num_qps > 1 && !bw) return fail("-q (several QPs) is only available in bandwidth tests");
  if (b.rdma_cm) {
    // perftest: "UC is not supported in librdmacm" (rdma::CmConnection makes RC and UD QPs).
    if (b.uc) return fail("-R (rdma_cm): UC is not supported in librdmacm");
  }
  if (b.post_list < 1 || b.post_list > b.tx_depth)
    return fail("-l (post list) must be 1-tx_depth ({})", b.tx_depth);
  if (b.post_list > 1) {
    if (!bw) return fail("-l (post list) is supported in bandwidth tests only");
    if (!b.duration_ms && b.iters % b.post_list != 0)
      return fail("-n ({}) must be a multiple of -l (post list {})", b.iters, b.post_list);
    if (b.post_list % b.cq_mod != 0)
      return fail("-l (post list {}) must be a multiple of -Q (cq moderation {})", b.post_list, b.cq_mod);
  }
  return {};
}

}  // namespace weft::cli
