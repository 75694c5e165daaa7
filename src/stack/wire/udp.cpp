#include "stack/wire/udp.hpp"

#include "base/big_endian.hpp"
#include "stack/wire/checksum.hpp"
#include "stack/wire/ipv4.hpp"

namespace weft::stack::wire {

ParseError parse_udp(Bytes d, Ipv4Addr src, Ipv4Addr dst, UdpDatagram& out, bool verify_checksum) {
  if (d.size() < kUdpHeader) return ParseError::truncated;
  const size_t len = be::load<uint16_t>(d.data() + 4);
  if (len < kUdpHeader) return ParseError::malformed;
  if (len > d.size()) return ParseError::truncated;
  const Bytes dgram = d.first(len);
  if (verify_checksum && be::load<uint16_t>(d.data() + 6) != 0 &&
      csum_fold(csum_add(csum_pseudo(src, dst, ipproto::udp, static_cast<uint16_t>(len)), dgram)) != 0xffff)
    return ParseError::checksum;
  out.src_port = be::load<uint16_t>(d.data());
  out.dst_port = be::load<uint16_t>(d.data() + 2);
  out.payload = dgram.subspan(kUdpHeader);
  return ParseError::ok;
}

size_t emit_udp(MutBytes out, uint16_t src_port, uint16_t dst_port, Ipv4Addr src, Ipv4Addr dst,
                size_t payload_len, Csum csum) {
  if (out.size() < kUdpHeader || out.size() - kUdpHeader < payload_len || payload_len > 65535 - kUdpHeader)
    return 0;
  const auto len = static_cast<uint16_t>(kUdpHeader + payload_len);
  uint8_t* p = out.data();
  be::store<uint16_t>(p, src_port);
  be::store<uint16_t>(p + 2, dst_port);
  be::store<uint16_t>(p + 4, len);
  be::store<uint16_t>(p + 6, 0);
  const uint64_t pseudo = csum_pseudo(src, dst, ipproto::udp, len);
  if (csum == Csum::full) {
    const uint16_t c = csum_finish(csum_add(pseudo, out.first(len)));
    be::store<uint16_t>(p + 6, c == 0 ? 0xffff : c);
  } else if (csum == Csum::partial) {
    be::store<uint16_t>(p + 6, csum_fold(pseudo));
  }
  return kUdpHeader;
}

}  // namespace weft::stack::wire
