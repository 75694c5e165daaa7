#pragma once
// IPv4 headers (RFC 791). Parsing checks version, header length, total length against the
// buffer (Ethernet may pad short packets: bytes past the total length are cut off), the reserved
// flag, that a fragment does not reach past 65535 bytes, and the header checksum (unless the
// device verified it). Options are handed back as bytes; the stack does not act on any.
#include "stack/wire/types.hpp"

namespace weft::stack::wire {

inline constexpr size_t kIpv4Header = 20;  // without options
inline constexpr size_t kIpv4MaxPacket = 65535;

namespace ipproto {
inline constexpr uint8_t icmp = 1;
inline constexpr uint8_t tcp = 6;
inline constexpr uint8_t udp = 17;
}  // namespace ipproto

struct Ipv4Packet {
  uint8_t tos = 0;  // DSCP and ECN
  uint16_t ident = 0;
  bool dont_fragment = false;
  bool more_fragments = false;
  uint16_t frag_offset = 0;  // in bytes (the field counts 8-byte units)
  uint8_t ttl = 0;
  uint8_t protocol = 0;
  Ipv4Addr src;
  Ipv4Addr dst;
  Bytes options;  // between the fixed header and the payload
  Bytes payload;  // exactly total length minus header length
  bool is_fragment() const { return more_fragments || frag_offset != 0; }
};

ParseError parse_ipv4(Bytes data, Ipv4Packet& out, bool verify_checksum = true);
// The same checks on the first bytes of a packet whose total length is `wire_len` (a capture cut
// short: the rest is read elsewhere); `payload` is then only the part of it in `head`.
ParseError parse_ipv4_head(Bytes head, size_t wire_len, Ipv4Packet& out);

// What emit_ipv4 writes: a 20-byte header without options.
struct Ipv4Emit {
  uint8_t tos = 0;
  uint16_t ident = 0;
  bool dont_fragment = true;
  bool more_fragments = false;
  uint16_t frag_offset = 0;  // bytes, a multiple of 8
  uint8_t ttl = 64;
  uint8_t protocol = 0;
  Ipv4Addr src;
  Ipv4Addr dst;
};

// Writes the header at the start of `out` for a payload of `payload_len` bytes (which the caller
// puts after it) with its checksum unless `csum` is Csum::none (the device fills it in). Returns
// 20, or 0 if `out` is too small, the packet would exceed 65535 bytes or the offset is not a
// multiple of 8.
size_t emit_ipv4(MutBytes out, const Ipv4Emit& h, size_t payload_len, Csum csum = Csum::full);

}  // namespace weft::stack::wire
