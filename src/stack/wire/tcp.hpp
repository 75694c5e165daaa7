#pragma once
// TCP segment headers (RFC 9293 section 3.1) over IPv4, with their options (tcp_options.hpp).
// Parsing checks the data offset against the buffer and the checksum over the pseudo-header,
// header and payload (unless the device verified it).
#include "stack/wire/tcp_options.hpp"

namespace weft::stack::wire {

inline constexpr size_t kTcpHeader = 20;  // without options

namespace tcpflag {
inline constexpr uint8_t fin = 0x01;
inline constexpr uint8_t syn = 0x02;
inline constexpr uint8_t rst = 0x04;
inline constexpr uint8_t psh = 0x08;
inline constexpr uint8_t ack = 0x10;
inline constexpr uint8_t urg = 0x20;
inline constexpr uint8_t ece = 0x40;
inline constexpr uint8_t cwr = 0x80;
}  // namespace tcpflag

// The header fields a segment carries (what the state machine reads and writes).
struct TcpHeader {
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  uint32_t seq = 0;
  uint32_t ack = 0;
  uint8_t flags = 0;
  uint16_t window = 0;  // as on the wire, before scaling
  uint16_t urgent = 0;
  TcpOptions options;
  friend bool operator==(const TcpHeader&, const TcpHeader&) = default;
};

struct TcpSegment {
  TcpHeader h;
  Bytes payload;
  size_t header_len = 0;
  // Sequence space the segment occupies: payload plus one each for SYN and FIN (RFC 9293 3.4).
  uint32_t seg_len() const {
    return static_cast<uint32_t>(payload.size()) + ((h.flags & tcpflag::syn) ? 1 : 0) +
           ((h.flags & tcpflag::fin) ? 1 : 0);
  }
};

// `data` is the IP payload; the addresses are for the pseudo-header.
ParseError parse_tcp(Bytes data, Ipv4Addr src, Ipv4Addr dst, TcpSegment& out, bool verify_checksum = true);

// The header length emit_tcp writes for these options (20 plus tcp_options_len).
inline size_t tcp_header_len(const TcpHeader& h) { return kTcpHeader + tcp_options_len(h.options); }

// Writes the header at the start of `out` for `payload_len` bytes that the caller already put at
// out[tcp_header_len(h)...]. Csum::full computes the checksum; Csum::partial stores the folded
// pseudo-header sum for a device that completes it (virtio-net NEEDS_CSUM); Csum::none leaves 0.
// Returns the header length, or 0 if it does not fit.
size_t emit_tcp(MutBytes out, const TcpHeader& h, Ipv4Addr src, Ipv4Addr dst, size_t payload_len,
                Csum csum = Csum::full);

}  // namespace weft::stack::wire
