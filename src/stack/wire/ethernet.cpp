#include "stack/wire/ethernet.hpp"

#include <cstring>

#include "base/big_endian.hpp"

namespace weft::stack::wire {

ParseError parse_ethernet(Bytes frame, EthernetFrame& out) {
  if (frame.size() < kEthernetHeader) return ParseError::truncated;
  std::memcpy(out.dst.b.data(), frame.data(), 6);
  std::memcpy(out.src.b.data(), frame.data() + 6, 6);
  out.ethertype = be::load<uint16_t>(frame.data() + 12);
  out.payload = frame.subspan(kEthernetHeader);
  if (out.ethertype < 0x0600) return ParseError::unsupported;
  return ParseError::ok;
}

size_t emit_ethernet(MutBytes out, const MacAddr& dst, const MacAddr& src, uint16_t type) {
  if (out.size() < kEthernetHeader) return 0;
  std::memcpy(out.data(), dst.b.data(), 6);
  std::memcpy(out.data() + 6, src.b.data(), 6);
  be::store<uint16_t>(out.data() + 12, type);
  return kEthernetHeader;
}

}  // namespace weft::stack::wire
