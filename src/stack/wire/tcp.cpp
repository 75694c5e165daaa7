#include "stack/wire/tcp.hpp"

#include "base/big_endian.hpp"
#include "stack/wire/checksum.hpp"
#include "stack/wire/ipv4.hpp"

namespace weft::stack::wire {

ParseError parse_tcp(Bytes d, Ipv4Addr src, Ipv4Addr dst, TcpSegment& out, bool verify_checksum) {
  if (d.size() < kTcpHeader) return ParseError::truncated;
  const uint8_t* p = d.data();
  const size_t hlen = (size_t{p[12]} >> 4) * 4;
  if (hlen < kTcpHeader) return ParseError::malformed;
  if (hlen > d.size()) return ParseError::truncated;
  if (d.size() > kIpv4MaxPacket) return ParseError::malformed;
  if (verify_checksum &&
      csum_fold(csum_add(csum_pseudo(src, dst, ipproto::tcp, static_cast<uint16_t>(d.size())), d)) != 0xffff)
    return ParseError::checksum;
  if (const ParseError e = parse_tcp_options(d.subspan(kTcpHeader, hlen - kTcpHeader), out.h.options);
      e != ParseError::ok)
    return e;
  out.h.src_port = be::load<uint16_t>(p);
  out.h.dst_port = be::load<uint16_t>(p + 2);
  out.h.seq = be::load<uint32_t>(p + 4);
  out.h.ack = be::load<uint32_t>(p + 8);
  out.h.flags = p[13];  // the NS bit (RFC 3540, historic) in p[12] is ignored
  out.h.window = be::load<uint16_t>(p + 14);
  out.h.urgent = be::load<uint16_t>(p + 18);
  out.header_len = hlen;
  out.payload = d.subspan(hlen);
  return ParseError::ok;
}

size_t emit_tcp(MutBytes out, const TcpHeader& h, Ipv4Addr src, Ipv4Addr dst, size_t payload_len, Csum csum) {
  const size_t hlen = tcp_header_len(h);
  if (out.size() < hlen || out.size() - hlen < payload_len || hlen + payload_len > kIpv4MaxPacket - 20)
    return 0;
  uint8_t* p = out.data();
  be::store<uint16_t>(p, h.src_port);
  be::store<uint16_t>(p + 2, h.dst_port);
  be::store<uint32_t>(p + 4, h.seq);
  be::store<uint32_t>(p + 8, h.ack);
  p[12] = static_cast<uint8_t>((hlen / 4) << 4);
  p[13] = h.flags;
  be::store<uint16_t>(p + 14, h.window);
  be::store<uint16_t>(p + 16, 0);
  be::store<uint16_t>(p + 18, h.urgent);
  emit_tcp_options(out.subspan(kTcpHeader, hlen - kTcpHeader), h.options);
  const auto len = static_cast<uint16_t>(hlen + payload_len);
  const uint64_t pseudo = csum_pseudo(src, dst, ipproto::tcp, len);
  if (csum == Csum::full)
    be::store<uint16_t>(p + 16, csum_finish(csum_add(pseudo, out.first(len))));
  else if (csum == Csum::partial)
    be::store<uint16_t>(p + 16, csum_fold(pseudo));
  return hlen;
}

}  // namespace weft::stack::wire
