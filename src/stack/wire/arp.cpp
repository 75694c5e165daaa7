#include "stack/wire/arp.hpp"

#include <cstring>

#include "base/big_endian.hpp"

namespace weft::stack::wire {

ParseError parse_arp(Bytes d, ArpPacket& out) {
  if (d.size() < kArpSize) return ParseError::truncated;
  const uint8_t* p = d.data();
  if (be::load<uint16_t>(p) != 1 || be::load<uint16_t>(p + 2) != 0x0800 || p[4] != 6 || p[5] != 4)
    return ParseError::unsupported;
  const uint16_t op = be::load<uint16_t>(p + 6);
  if (op != 1 && op != 2) return ParseError::unsupported;
  out.op = static_cast<ArpOp>(op);
  std::memcpy(out.sender_mac.b.data(), p + 8, 6);
  out.sender_ip.v = be::load<uint32_t>(p + 14);
  std::memcpy(out.target_mac.b.data(), p + 18, 6);
  out.target_ip.v = be::load<uint32_t>(p + 24);
  return ParseError::ok;
}

size_t emit_arp(MutBytes out, const ArpPacket& a) {
  if (out.size() < kArpSize) return 0;
  uint8_t* p = out.data();
  be::store<uint16_t>(p, 1);
  be::store<uint16_t>(p + 2, 0x0800);
  p[4] = 6;
  p[5] = 4;
  be::store<uint16_t>(p + 6, static_cast<uint16_t>(a.op));
  std::memcpy(p + 8, a.sender_mac.b.data(), 6);
  be::store<uint32_t>(p + 14, a.sender_ip.v);
  std::memcpy(p + 18, a.target_mac.b.data(), 6);
  be::store<uint32_t>(p + 24, a.target_ip.v);
  return kArpSize;
}

}  // namespace weft::stack::wire
