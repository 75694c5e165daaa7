#include "stack/wire/ipv4.hpp"

#include <algorithm>

#include "base/big_endian.hpp"
#include "stack/wire/checksum.hpp"

namespace weft::stack::wire {

namespace {
// The option list as Linux's ip_options_compile() reads it: an option other than EOL and NOP whose
// length is below 2 or runs past the header breaks the packet, and so do record route and the
// source routes (length below 3, pointer below 4) and timestamps (length below 4, pointer below 5)
// whose pointer cannot be. Linux drops such a packet (and sends a parameter problem); so does this
// stack (without the ICMP message). Source-routed packets are dropped too, as Linux does with
// accept_source_route 0, its default: a host that answered along the route would let a sender
// forge an address.
bool ipv4_options_ok(Bytes o) {
  size_t i = 0;
  while (i < o.size()) {
    const uint8_t kind = o[i];
    if (kind == 0) break;  // end of list
    if (kind == 1) {       // no operation
      ++i;
      continue;
    }
    if (i + 1 >= o.size()) return false;
    const size_t len = o[i + 1];
    if (len < 2 || len > o.size() - i) return false;
    switch (kind) {
      case 7:    // record route
      case 131:  // loose source route
      case 137:  // strict source route
        if (len < 3 || o[i + 2] < 4) return false;
        if (kind != 7) return false;  // not accepted
        break;
      case 68:  // timestamp
        if (len < 4 || o[i + 2] < 5) return false;
        break;
      default:
        break;
    }
    i += len;
  }
  return true;
}
}  // namespace

namespace {
// `wire_len`: the packet's length when only its first d.size() bytes are at hand (0: all are).
ParseError parse(Bytes d, size_t wire_len, Ipv4Packet& out, bool verify_checksum) {
  if (d.size() < kIpv4Header) return ParseError::truncated;
  const uint8_t* p = d.data();
  if ((p[0] >> 4) != 4) return ParseError::malformed;
  const size_t hlen = size_t{p[0] & 0x0fu} * 4;
  if (hlen < kIpv4Header) return ParseError::malformed;
  if (d.size() < hlen) return ParseError::truncated;
  const size_t total = be::load<uint16_t>(p + 2);
  if (total < hlen) return ParseError::malformed;
  if (wire_len != 0 && (wire_len != total || d.size() > total)) return ParseError::malformed;
  if (wire_len == 0 && d.size() < total) return ParseError::truncated;
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
  if (!ipv4_options_ok(out.options)) return ParseError::malformed;
  out.payload = d.subspan(hlen, std::min(total, d.size()) - hlen);
  if (size_t{out.frag_offset} + (total - hlen) > kIpv4MaxPacket) return ParseError::malformed;
  // A fragment that is not the last must carry a multiple of 8 bytes (RFC 791 fragmentation).
  if (out.more_fragments && (total == hlen || (total - hlen) % 8 != 0)) return ParseError::malformed;
  return ParseError::ok;
}
}  // namespace

ParseError parse_ipv4(Bytes d, Ipv4Packet& out, bool verify_checksum) {
  return parse(d, 0, out, verify_checksum);
}

ParseError parse_ipv4_head(Bytes head, size_t wire_len, Ipv4Packet& out) {
  if (wire_len < head.size()) return ParseError::malformed;
  return parse(head, wire_len, out, true);
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
