#include "stack/wire/checksum.hpp"

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
