#include "stack/wire/icmp.hpp"

#include "base/big_endian.hpp"
#include "stack/wire/checksum.hpp"

namespace weft::stack::wire {

ParseError parse_icmp(Bytes d, IcmpMessage& out, bool verify_checksum) {
  if (d.size() < kIcmpHeader) return ParseError::truncated;
  if (verify_checksum && csum_fold(csum_add(0, d)) != 0xffff) return ParseError::checksum;
  out.type = d[0];
  out.code = d[1];
  out.ident = be::load<uint16_t>(d.data() + 4);
  out.seq = be::load<uint16_t>(d.data() + 6);
  out.payload = d.subspan(kIcmpHeader);
  return ParseError::ok;
}

size_t emit_icmp(MutBytes out, uint8_t type, uint8_t code, uint16_t ident, uint16_t seq, size_t payload_len) {
  if (out.size() < kIcmpHeader || out.size() - kIcmpHeader < payload_len) return 0;
  uint8_t* p = out.data();
  p[0] = type;
  p[1] = code;
  be::store<uint16_t>(p + 2, 0);
  be::store<uint16_t>(p + 4, ident);
  be::store<uint16_t>(p + 6, seq);
  be::store<uint16_t>(p + 2, csum_finish(csum_add(0, out.first(kIcmpHeader + payload_len))));
  return kIcmpHeader;
}

}  // namespace weft::stack::wire
