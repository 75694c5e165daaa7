#include "stack/wire/ipv4.hpp"

#include "base/big_endian.hpp"
#include "stack/wire/checksum.hpp"

namespace weft::stack::wire {

ParseError parse_ipv4(Bytes d, Ipv4Packet& out, bool verify_checksum) {
  if (d.size() < kIpv4Header) return ParseError::truncated;
  const uint8_t* p = d.data();
  if ((p[0] >> 4) != 4) return ParseError::malformed;
  const size_t hlen = size_t{p[0] & 0x0fu} * 4;
  if (hlen < kIpv4Header) return ParseError::malformed;
  if (d.size() < hlen) return ParseError::truncated;
  const size_t total = be::load<uint16_t>(p + 2);
  if (total < hlen) return ParseError::malformed;
  if (d.size() < total) return ParseError::truncated;
  if (verify_checksum && csum_fold(csum_add(0, d.first(hlen))) != 0xffff) return ParseError::checksum;
  const uint16_t frag = be::load<uint16_t>(p + 6);
  if (frag & 0x8000) return ParseError::malformed;  // the reserved ("evil") bit
  out.tos = p[1];
  out.ident = be::load<uint16_t>(p + 4);
  out.dont_fragment = (frag & 0x4000) != 0;
  out.more_fragments = (frag & 0x2000) != 0;
  out.frag_offset = static_cast<uint16_t>((frag & 0x1fff) * 8);
  out.ttl = p[8];
  out.protocol = p[9];
  out.src.v = be::load<uint32_t>(p + 12);
  out.dst.v = be::load<uint32_t>(p + 16);
  out.options = d.subspan(kIpv4Header, hlen - kIpv4Header);
  out.payload = d.subspan(hlen, total - hlen);
  if (size_t{out.frag_offset} + out.payload.size() > kIpv4MaxPacket) return ParseError::malformed;
  // A fragment that is not the last must carry a multiple of 8 bytes (RFC 791 fragmentation).
  if (out.more_fragments && (out.payload.empty() || out.payload.size() % 8 != 0))
    return ParseError::malformed;
  return ParseError::ok;
}

size_t emit_ipv4(MutBytes out, const Ipv4Emit& h, size_t payload_len, Csum csum) {
  if (out.size() < kIpv4Header || payload_len > kIpv4MaxPacket - kIpv4Header || h.frag_offset % 8 != 0)
    return 0;
  uint8_t* p = out.data();
  p[0] = 0x45;
  p[1] = h.tos;
  be::store<uint16_t>(p + 2, static_cast<uint16_t>(kIpv4Header + payload_len));
  be::store<uint16_t>(p + 4, h.ident);
  be::store<uint16_t>(p + 6, static_cast<uint16_t>((h.dont_fragment ? 0x4000 : 0) |
                                                   (h.more_fragments ? 0x2000 : 0) | (h.frag_offset / 8)));
  p[8] = h.ttl;
  p[9] = h.protocol;
  be::store<uint16_t>(p + 10, 0);
  be::store<uint32_t>(p + 12, h.src.v);
  be::store<uint32_t>(p + 16, h.dst.v);
  if (csum != Csum::none) be::store<uint16_t>(p + 10, csum_finish(csum_add(0, out.first(kIpv4Header))));
  return kIpv4Header;
}

}  // namespace weft::stack::wire
