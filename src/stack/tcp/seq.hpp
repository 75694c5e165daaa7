#pragma once
// Sequence number arithmetic modulo 2^32 (RFC 9293 3.4): a < b when b is less than 2^31 ahead.
#include <cstdint>

namespace weft::stack::tcp {

constexpr bool seq_lt(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }
constexpr bool seq_le(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) <= 0; }
constexpr bool seq_gt(uint32_t a, uint32_t b) { return seq_lt(b, a); }
constexpr bool seq_ge(uint32_t a, uint32_t b) { return seq_le(b, a); }
constexpr uint32_t seq_max(uint32_t a, uint32_t b) { return seq_lt(a, b) ? b : a; }
constexpr uint32_t seq_min(uint32_t a, uint32_t b) { return seq_lt(a, b) ? a : b; }
// b - a as a distance, for a <= b.
constexpr uint32_t seq_diff(uint32_t b, uint32_t a) { return b - a; }

}  // namespace weft::stack::tcp
