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

IcmpErrorKind icmp_error_kind(uint8_t type, uint8_t code) {
  if (type == icmptype::time_exceeded) return IcmpErrorKind::time_exceeded;
  if (type != icmptype::dest_unreachable) return IcmpErrorKind::none;
  switch (code) {
    case 0:
    case 6:
    case 9:
    case 11:
      return IcmpErrorKind::net_unreachable;
    case 1:
    case 7:
    case 10:
    case 12:
    case 13:
      return IcmpErrorKind::host_unreachable;
    case 2:
      return IcmpErrorKind::proto_unreachable;
    case 3:
      return IcmpErrorKind::port_unreachable;
    case 4:
      return IcmpErrorKind::frag_needed;
    case 5:
      return IcmpErrorKind::source_route_failed;
    default:
      return IcmpErrorKind::none;
  }
}

ParseError parse_icmp_quote(Bytes d, IcmpQuote& out) {
  if (d.size() < 20) return ParseError::truncated;
  if ((d[0] >> 4) != 4) return ParseError::malformed;
  const size_t ihl = size_t{d[0] & 0xfu} * 4;
  if (ihl < 20) return ParseError::malformed;
  if (d.size() < ihl + 8) return ParseError::truncated;
  if ((be::load<uint16_t>(d.data() + 6) & 0x1fff) != 0)
    return ParseError::unsupported;  // not a first fragment
  out.total_len = be::load<uint16_t>(d.data() + 2);
  out.protocol = d[9];
  out.src.v = be::load<uint32_t>(d.data() + 12);
  out.dst.v = be::load<uint32_t>(d.data() + 16);
  out.src_port = be::load<uint16_t>(d.data() + ihl);
  out.dst_port = be::load<uint16_t>(d.data() + ihl + 2);
  out.tcp_seq = be::load<uint32_t>(d.data() + ihl + 4);
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
