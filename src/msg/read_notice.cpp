#include "msg/read_notice.hpp"

#include "msg/wire_records.hpp"

namespace weft::msg {

ReadNotice::Wire ReadNotice::encode() const {
  Wire w{};
  wire::encode_notice({seq, length, offset}, w);
  return w;
}

Result<ReadNotice> ReadNotice::decode(std::span<const std::byte> b) {
  wire::NoticeFields f;
  if (wire::decode_notice(b, f) != wire::ParseError::ok)
    return fail("read notice: {} bytes, need {}", b.size(), kWireSize);
  return ReadNotice{f.seq, f.length, f.offset};
}

Result<ReadNotice> ReadNotice::decode_expected(std::span<const std::byte> b, uint64_t seq, uint32_t slots,
                                               uint32_t slot_bytes) {
  auto n = decode(b);
  if (!n) return n;
  switch (wire::check_notice({n->seq, n->length, n->offset}, seq, slots, slot_bytes)) {
    case wire::ParseError::ok:
      return n;
    case wire::ParseError::slots:
      return fail("read notice: no slots");
    case wire::ParseError::sequence:
      return fail("read notice: sequence {}, expected {}", n->seq, static_cast<uint32_t>(seq));
    case wire::ParseError::offset:
      return fail("read notice {}: offset {}, expected {}", n->seq, n->offset,
                  (seq % slots) * uint64_t{slot_bytes});
    default:
      return fail("read notice {}: {} bytes, at most {}", n->seq, n->length, slot_bytes);
  }
}

}  // namespace weft::msg
