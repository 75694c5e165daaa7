#pragma once
// TCP options: MSS (RFC 9293/6691), window scale and timestamps (RFC 7323), SACK-permitted and
// SACK blocks (RFC 2018). Unknown kinds are skipped by their length. As in Linux, nothing drops
// the segment: a structurally broken list (a length below 2 or past the end) ends the parse with
// what came before it, and a known option with the wrong length is skipped (issue 26: a SYN with
// damaged options was dropped; Linux answers it without them).
#include "stack/wire/types.hpp"

namespace weft::stack::wire {

inline constexpr size_t kTcpMaxOptions = 40;
inline constexpr size_t kMaxSackBlocks = 4;  // what fits in 40 bytes without timestamps

namespace tcpopt {
inline constexpr uint8_t eol = 0;
inline constexpr uint8_t nop = 1;
inline constexpr uint8_t mss = 2;
inline constexpr uint8_t wscale = 3;
inline constexpr uint8_t sack_permitted = 4;
inline constexpr uint8_t sack = 5;
inline constexpr uint8_t timestamps = 8;
}  // namespace tcpopt

struct SackBlock {
  uint32_t left = 0;   // first sequence number of the block
  uint32_t right = 0;  // one past the last
  friend bool operator==(const SackBlock&, const SackBlock&) = default;
};

struct TcpOptions {
  bool has_mss = false;
  uint16_t mss = 0;
  bool has_wscale = false;
  uint8_t wscale = 0;  // as sent; RFC 7323 says a receiver treats values above 14 as 14
  bool sack_permitted = false;
  bool has_timestamps = false;
  uint32_t ts_val = 0;
  uint32_t ts_ecr = 0;
  uint8_t sack_count = 0;
  SackBlock sack[kMaxSackBlocks];
  friend bool operator==(const TcpOptions&, const TcpOptions&) = default;
};

ParseError parse_tcp_options(Bytes data, TcpOptions& out);

// Bytes emit_tcp_options writes, a multiple of 4. SACK blocks that do not fit in 40 bytes next to
// the other options are left out (the most recent block goes first, RFC 2018 section 4).
size_t tcp_options_len(const TcpOptions& o);

// Writes the options in the layout Linux uses (MSS; SACK-permitted folded into the timestamps'
// padding; NOP + window scale; NOP NOP + SACK) so that segments compare byte for byte with the
// kernel's. `out` must hold tcp_options_len(o) bytes. Returns the bytes written.
size_t emit_tcp_options(MutBytes out, const TcpOptions& o);

}  // namespace weft::stack::wire
