#pragma once
// ICMPv4 (RFC 792). Every message parses to type, code and the 4 bytes after the checksum; echo
// request/reply (types 8/0) read those as identifier and sequence number. The checksum covers
// the whole message.
#include "stack/wire/types.hpp"

namespace weft::stack::wire {

inline constexpr size_t kIcmpHeader = 8;

namespace icmptype {
inline constexpr uint8_t echo_reply = 0;
inline constexpr uint8_t dest_unreachable = 3;
inline constexpr uint8_t echo_request = 8;
inline constexpr uint8_t time_exceeded = 11;
}  // namespace icmptype

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
