#pragma once
// The Internet checksum (RFC 1071): a one's-complement sum of 16-bit big-endian words. Summed
// 32 bits at a time into a 64-bit accumulator; since 2^16 = 1 (mod 0xffff), folding that back to
// 16 bits gives the same result as summing 16-bit words, with a quarter of the additions.
#include <cstdint>

#include "stack/wire/types.hpp"

namespace weft::stack::wire {

// Adds `data` to `acc`. An odd-length piece is padded with a zero byte, so when a message is
// summed in pieces only the last may have odd length.
uint64_t csum_add(uint64_t acc, Bytes data);

// Copies `src` to `dst` (which must have room for it) and adds it to `acc` as csum_add would, in
// one pass: a segment's payload goes from the send ring into the frame with its checksum taken on
// the way instead of being read a second time. Same padding rule as csum_add.
uint64_t csum_copy(uint8_t* dst, Bytes src, uint64_t acc);

// Folds to 16 bits and complements: the value that goes into the header.
uint16_t csum_finish(uint64_t acc);

// Folds to 16 bits without complementing (virtio-net partial checksums store this).
uint16_t csum_fold(uint64_t acc);

// The TCP/UDP pseudo-header (RFC 9293 3.1, RFC 768): addresses, protocol, upper-layer length.
inline uint64_t csum_pseudo(Ipv4Addr src, Ipv4Addr dst, uint8_t protocol, uint16_t length) {
  return uint64_t{src.v} + dst.v + protocol + length;
}

}  // namespace weft::stack::wire
