#include "stack/wire/checksum.hpp"

#include <bit>
#include <cstring>

#include "base/big_endian.hpp"

namespace weft::stack::wire {

uint64_t csum_add(uint64_t acc, Bytes data) {
  const uint8_t* p = data.data();
  size_t n = data.size();
  // The 64-bit accumulator cannot overflow: it would take 2^32 words (16 GiB) per call.
  for (; n >= 16; p += 16, n -= 16)
    acc += uint64_t{be::load<uint32_t>(p)} + be::load<uint32_t>(p + 4) + be::load<uint32_t>(p + 8) +
           be::load<uint32_t>(p + 12);
  for (; n >= 4; p += 4, n -= 4) acc += be::load<uint32_t>(p);
  if (n >= 2) {
    acc += be::load<uint16_t>(p);
    p += 2;
    n -= 2;
  }
  if (n == 1) acc += uint32_t{*p} << 8;
  return acc;
}

namespace {
// Adds both 32-bit halves of a 64-bit word: 2^32 of these fit the 64-bit sum.
inline uint64_t halves(uint64_t w) { return (w & 0xffffffff) + (w >> 32); }
}  // namespace

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
