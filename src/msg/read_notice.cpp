#include "msg/read_notice.hpp"

#include "msg/wire_le.hpp"

namespace weft::msg {

ReadNotice::Wire ReadNotice::encode() const {
  Wire w{};
  wire::put<uint32_t>(w, 0, seq);
  wire::put<uint32_t>(w, 4, length);
  wire::put<uint64_t>(w, 8, offset);
  return w;
}

Result<ReadNotice> ReadNotice::decode(std::span<const std::byte> b) {
  if (b.size() != kWireSize) return fail("read notice: {} bytes, need {}", b.size(), kWireSize);
  return ReadNotice{wire::get<uint32_t>(b, 0), wire::get<uint32_t>(b, 4), wire::get<uint64_t>(b, 8)};
}

Result<ReadNotice> ReadNotice::decode_expected(std::span<const std::byte> b, uint64_t seq, uint32_t slots,
                                               uint32_t slot_bytes) {
  auto n = decode(b);
  if (!n) return n;
  if (slots == 0) return fail("read notice: no slots");
  if (n->seq != static_cast<uint32_t>(seq))
    return fail("read notice: sequence {}, expected {}", n->seq, static_cast<uint32_t>(seq));
  const uint64_t want = (seq % slots) * uint64_t{slot_bytes};
  if (n->offset != want) return fail("read notice {}: offset {}, expected {}", n->seq, n->offset, want);
  if (n->length > slot_bytes)
    return fail("read notice {}: {} bytes, at most {}", n->seq, n->length, slot_bytes);
  return n;
}

}  // namespace weft::msg
