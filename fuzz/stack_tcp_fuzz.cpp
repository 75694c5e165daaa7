// TCP header and option parser: spans stay inside the input; an accepted header re-emits in the
// stack's canonical option layout and parses back to the same fields (SACK blocks that do not fit
// next to the other options are dropped by the emitter, so only a prefix of them must survive).
#include <cstring>
#include <vector>

#include "stack/wire/tcp.hpp"
#include "stack_fuzz_common.hpp"

using namespace weft::stack::wire;
using namespace weft::stack::wire::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::vector<uint8_t> again(70000);
  const Ipv4Addr src = Ipv4Addr::of(10, 0, 0, 1), dst = Ipv4Addr::of(10, 0, 0, 2);
  TcpSegment s;
  // Without the checksum, so the fuzzer reaches the option parser.
  if (parse_tcp(Bytes(data, size), src, dst, s, false) != ParseError::ok) return 0;
  require_inside(s.payload, data, size);
  require(s.header_len >= kTcpHeader && s.header_len <= 60 && s.header_len + s.payload.size() == size);
  require(s.h.options.sack_count <= kMaxSackBlocks);
  const size_t hlen = tcp_header_len(s.h);
  require(hlen <= 60 && hlen % 4 == 0);
  if (!s.payload.empty()) std::memcpy(again.data() + hlen, s.payload.data(), s.payload.size());
  require(emit_tcp(again, s.h, src, dst, s.payload.size()) == hlen);
  TcpSegment t;
  require(parse_tcp(Bytes(again.data(), hlen + s.payload.size()), src, dst, t, true) == ParseError::ok);
  TcpHeader a = s.h, b = t.h;
  require(b.options.sack_count <= a.options.sack_count);
  for (size_t k = 0; k < b.options.sack_count; ++k) require(a.options.sack[k] == b.options.sack[k]);
  a.options.sack_count = b.options.sack_count;
  for (size_t k = b.options.sack_count; k < kMaxSackBlocks; ++k) a.options.sack[k] = b.options.sack[k] = {};
  require(a == b);
  require(t.payload.size() == s.payload.size() &&
          (s.payload.empty() || std::memcmp(t.payload.data(), s.payload.data(), s.payload.size()) == 0));
  return 0;
}
