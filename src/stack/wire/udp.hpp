#pragma once
// UDP (RFC 768) over IPv4. The length field must fit the IP payload (bytes past it are cut off);
// a zero checksum means "none" and is accepted, a computed zero is sent as 0xffff.
#include "stack/wire/types.hpp"

namespace weft::stack::wire {

inline constexpr size_t kUdpHeader = 8;

struct UdpDatagram {
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  Bytes payload;
};

// `data` is the IP payload; the addresses are for the pseudo-header checksum.
ParseError parse_udp(Bytes data, Ipv4Addr src, Ipv4Addr dst, UdpDatagram& out, bool verify_checksum = true);

// Writes the header at the start of `out` for `payload_len` bytes already at out[8...]. Csum::full
// computes the checksum, Csum::partial stores the folded pseudo-header sum (the device adds the
// rest), Csum::none sends 0. Returns 8, or 0 if it does not fit or the datagram exceeds 65535.
size_t emit_udp(MutBytes out, uint16_t src_port, uint16_t dst_port, Ipv4Addr src, Ipv4Addr dst,
                size_t payload_len, Csum csum = Csum::full);

}  // namespace weft::stack::wire
