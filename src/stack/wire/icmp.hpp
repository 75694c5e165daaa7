#pragma once
// ICMPv4 (RFC 792). Every message parses to type, code and the 4 bytes after the checksum; echo
// request/reply (types 8/0) read those as identifier and sequence number. The checksum covers
// the whole message. Errors (destination unreachable, time exceeded) quote the datagram that
// caused them: parse_icmp_quote reads its addresses, ports and TCP sequence number, which is what
// a transport needs to find the socket and to check the error is about something it sent.
#include "stack/wire/types.hpp"

namespace weft::stack::wire {

inline constexpr size_t kIcmpHeader = 8;

namespace icmptype {
inline constexpr uint8_t echo_reply = 0;
inline constexpr uint8_t dest_unreachable = 3;
inline constexpr uint8_t echo_request = 8;
inline constexpr uint8_t time_exceeded = 11;
}  // namespace icmptype

// What an error reports, from its type and code (RFC 792, RFC 1122 3.2.2.1, RFC 1191).
enum class IcmpErrorKind : uint8_t {
  none,                 // not an error this stack acts on
  net_unreachable,      // type 3 code 0 (and 6, 9, 11: unknown / prohibited / TOS)
  host_unreachable,     // type 3 code 1 (and 7, 10, 12, 13 administratively prohibited)
  proto_unreachable,    // type 3 code 2
  port_unreachable,     // type 3 code 3
  frag_needed,          // type 3 code 4: DF set, the next hop's MTU in the low 16 bits (RFC 1191)
  source_route_failed,  // type 3 code 5
  time_exceeded,        // type 11
};
IcmpErrorKind icmp_error_kind(uint8_t type, uint8_t code);

// The start of the datagram an error quotes (RFC 792: its IP header and at least 8 more bytes).
struct IcmpQuote {
  Ipv4Addr src;
  Ipv4Addr dst;
  uint8_t protocol = 0;
  uint16_t total_len = 0;  // the quoted datagram's total length (RFC 1191 7 when no MTU is given)
  uint16_t src_port = 0;   // TCP and UDP: the first 4 bytes of the transport header
  uint16_t dst_port = 0;
  uint32_t tcp_seq = 0;  // TCP: the quoted segment's sequence number (bytes 4-7)
};

// `payload` is an error's payload (IcmpMessage::payload). Checks version 4, the header length, that
// 8 bytes follow it and that it is a first fragment (later ones carry no transport header). The
// quoted header's checksum is not checked: routers may have changed the datagram (TTL, options).
ParseError parse_icmp_quote(Bytes payload, IcmpQuote& out);

struct IcmpMessage {
  uint8_t type = 0;
  uint8_t code = 0;
  uint16_t ident = 0;  // echo: identifier; otherwise the first half of the "rest of header"
  uint16_t seq = 0;    // echo: sequence number; otherwise the second half
  Bytes payload;       // after the 8-byte header
  bool is_echo() const { return type == icmptype::echo_request || type == icmptype::echo_reply; }
};

ParseError parse_icmp(Bytes data, IcmpMessage& out, bool verify_checksum = true);

// Writes an 8-byte header at the start of `out` for `payload_len` bytes that the caller already
// put at out[8...], with the checksum over both. Returns 8, or 0 if `out` is shorter than 8 +
// payload_len.
size_t emit_icmp(MutBytes out, uint8_t type, uint8_t code, uint16_t ident, uint16_t seq, size_t payload_len);

}  // namespace weft::stack::wire
