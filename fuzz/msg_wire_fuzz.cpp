// libFuzzer target for the records a message connection parses from its peer (src/msg
// wire_records): the hello exchanged at set-up and the read-pull notice. The parsers never crash;
// whatever they accept re-encodes to exactly the input bytes; an accepted notice that passes the receiver's
// check lies inside the send area it was checked against.
#include <cstdlib>
#include <cstring>

#include "msg/wire_records.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace w = weft::msg::wire;
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  w::HelloFields h;
  if (w::decode_hello(in, h) == w::ParseError::ok) {
    if (h.kind == 0 || h.kind > w::kMaxKind || h.qpn > 0xffffff || h.psn > 0xffffff) std::abort();
    std::byte out[w::kHelloSize];
    w::encode_hello(h, std::span<std::byte, w::kHelloSize>(out, w::kHelloSize));
    if (std::memcmp(out, data, w::kHelloSize) != 0) std::abort();
  }
  w::NoticeFields n;
  if (w::decode_notice(in, n) == w::ParseError::ok) {
    std::byte out[w::kNoticeSize];
    w::encode_notice(n, std::span<std::byte, w::kNoticeSize>(out, w::kNoticeSize));
    if (std::memcmp(out, data, w::kNoticeSize) != 0) std::abort();
    // Check against a receiver whose expectations come from the input's own first bytes.
    const uint32_t slots = 1 + (n.seq & 63), slot_bytes = 1 + (n.length & 0xffff);
    if (w::check_notice(n, n.seq, slots, slot_bytes) == w::ParseError::ok &&
        n.offset + n.length > uint64_t{slots} * slot_bytes)
      std::abort();
  }
  return 0;
}
