#include "stack/wire/checksum.hpp"

#include <bit>
#include <cstring>

namespace weft::stack::wire {

namespace {
// Adds both 32-bit halves of a 64-bit word: 2^32 of these fit the 64-bit sum.
inline uint64_t halves(uint64_t w) { return (w & 0xffffffff) + (w >> 32); }

// The one's-complement sum of `p[0..n)` in host byte order, folded to 16 bits and swapped to
// network order once (RFC 1071 section 2 (B): the sum is byte-order independent up to that swap),
// so no word is byte-swapped on its own; a tail is zero-padded at its end, as an odd last byte is
// the high half of a word of zero.
inline uint16_t host_order_sum(const uint8_t* p, size_t n) {
  uint64_t s = 0;
  for (; n >= 32; p += 32, n -= 32) {
    uint64_t w[4];
    std::memcpy(w, p, 32);
    s += halves(w[0]) + halves(w[1]) + halves(w[2]) + halves(w[3]);
  }
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    s += halves(w);
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    s += halves(w);
  }
  uint16_t f = csum_fold(s);
  if constexpr (std::endian::native == std::endian::little) f = __builtin_bswap16(f);
  return f;
}
}  // namespace

uint64_t csum_add(uint64_t acc, Bytes data) {
  // Every received frame whose checksum nobody verified is summed here (a TAP without vnet
  // headers: ~6 % of weft's samples receiving MSS frames with a byte swap per 32-bit word).
  return acc + host_order_sum(data.data(), data.size());
}

uint64_t csum_copy(uint8_t* dst, Bytes src, uint64_t acc) {
  // Summed in host byte order (no byte swap per word) and swapped once at the end: RFC 1071's
  // sum is byte-order independent up to swapping the folded result (section 2 (B)).
  const uint8_t* p = src.data();
  size_t n = src.size();
  uint64_t s = 0;
  for (; n >= 32; p += 32, dst += 32, n -= 32) {
    uint64_t w[4];
    std::memcpy(w, p, 32);
    std::memcpy(dst, w, 32);
    s += halves(w[0]) + halves(w[1]) + halves(w[2]) + halves(w[3]);
  }
  for (; n >= 8; p += 8, dst += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    std::memcpy(dst, &w, 8);
    s += halves(w);
  }
  if (n > 0) {
    uint64_t w = 0;  // the tail, zero-padded at its end as csum_add pads an odd byte
    std::memcpy(&w, p, n);
    std::memcpy(dst, p, n);
    s += halves(w);
  }
  uint16_t f = csum_fold(s);
  if constexpr (std::endian::native == std::endian::little) f = __builtin_bswap16(f);
  return acc + f;
}

uint16_t csum_fold(uint64_t acc) {
  while (acc >> 16) acc = (acc & 0xffff) + (acc >> 16);
  return static_cast<uint16_t>(acc);
}

uint16_t csum_finish(uint64_t acc) { return static_cast<uint16_t>(~csum_fold(acc)); }

const char* to_string(ParseError e) {
  switch (e) {
    case ParseError::ok:
      return "ok";
    case ParseError::truncated:
      return "truncated";
    case ParseError::malformed:
      return "malformed";
    case ParseError::checksum:
      return "bad checksum";
    case ParseError::unsupported:
      return "unsupported";
  }
  return "?";
}

}  // namespace weft::stack::wire
