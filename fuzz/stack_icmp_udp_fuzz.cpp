// ICMP and UDP parsers: accepted input re-emits to the same bytes but for the checksum's sign of
// zero (0x0000 and 0xffff both verify), and the re-emitted message parses again. The quote of an
// ICMP error parses only with a whole IPv4 header and 8 bytes after it, and reads them back.
#include <cstring>
#include <vector>

#include "stack/wire/icmp.hpp"
#include "stack/wire/udp.hpp"
#include "stack_fuzz_common.hpp"

using namespace weft::stack::wire;
using namespace weft::stack::wire::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::vector<uint8_t> again(70000);
  IcmpMessage m;
  if (parse_icmp(Bytes(data, size), m) == ParseError::ok) {
    require_inside(m.payload, data, size);
    require(m.payload.size() == size - kIcmpHeader);
    std::memcpy(again.data() + kIcmpHeader, m.payload.data(), m.payload.size());
    require(emit_icmp(again, m.type, m.code, m.ident, m.seq, m.payload.size()) == kIcmpHeader);
    require(std::memcmp(again.data(), data, 2) == 0 &&
            std::memcmp(again.data() + 4, data + 4, size - 4) == 0);
    IcmpMessage n;
    require(parse_icmp(Bytes(again.data(), size), n) == ParseError::ok);
  }
  IcmpQuote q;
  if (parse_icmp_quote(Bytes(data, size), q) == ParseError::ok) {
    const size_t ihl = size_t{data[0] & 0xfu} * 4;
    require(size >= 28 && ihl >= 20 && size >= ihl + 8 && (data[0] >> 4) == 4);
    require(q.protocol == data[9] && q.src_port == (data[ihl] << 8 | data[ihl + 1]));
  }
  const Ipv4Addr src = Ipv4Addr::of(10, 0, 0, 1), dst = Ipv4Addr::of(10, 0, 0, 2);
  UdpDatagram d;
  if (parse_udp(Bytes(data, size), src, dst, d) == ParseError::ok) {
    require_inside(d.payload, data, size);
    const size_t len = kUdpHeader + d.payload.size();
    require(len <= size);
    std::memcpy(again.data() + kUdpHeader, d.payload.data(), d.payload.size());
    const bool had_sum = data[6] != 0 || data[7] != 0;
    require(emit_udp(again, d.src_port, d.dst_port, src, dst, d.payload.size(),
                     had_sum ? Csum::full : Csum::none) == kUdpHeader);
    require(std::memcmp(again.data(), data, 6) == 0);
    UdpDatagram e;
    require(parse_udp(Bytes(again.data(), len), src, dst, e) == ParseError::ok);
    require(e.src_port == d.src_port && e.dst_port == d.dst_port && e.payload.size() == d.payload.size());
  }
  return 0;
}
