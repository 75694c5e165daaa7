#pragma once
// The 16-byte notice a read-pull sender SENDs: "message `seq` of `length` bytes waits at
// `offset` of my send area". The receiver checks it against what it expects (the sequence it
// counts itself, the slot that sequence maps to, the size limit) before it READs anything, so
// a corrupted or forged notice is an error, never a READ of the wrong bytes.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/result.hpp"

namespace weft::msg {

struct ReadNotice {
  uint32_t seq = 0;  // low 32 bits of the message's sequence number
  uint32_t length = 0;
  uint64_t offset = 0;  // in the sender's send area

  static constexpr size_t kWireSize = 16;
  using Wire = std::array<std::byte, kWireSize>;
  Wire encode() const;
  static Result<ReadNotice> decode(std::span<const std::byte> bytes);
  // Decodes and checks it is the notice for sequence `seq` in a send area of `slots` slots of
  // `slot_bytes` each.
  static Result<ReadNotice> decode_expected(std::span<const std::byte> bytes, uint64_t seq, uint32_t slots,
                                            uint32_t slot_bytes);
};

}  // namespace weft::msg
