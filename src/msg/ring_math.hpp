#pragma once
// Ring arithmetic shared by the write-based connections, pure so it is unit-tested on the host.
//
// Positions are 64-bit byte counters that only grow (tail: bytes the sender has placed; head:
// bytes the receiver has released); a counter modulo the ring size is the offset in the ring.
// 2^64 bytes is about 580 years at 1 Tb/s, so the counters never wrap in practice; the
// arithmetic below is modular anyway (unsigned differences), so it stays right across a wrap.
//
// A plain ring cannot hold a message across its end: such a message skips to the next lap and
// the skipped bytes count as used (sender and receiver apply the same rule to the same length,
// so no skip marker travels). A double-mapped ring never skips.
#include <cstdint>
#include <optional>

namespace weft::msg {

struct Placement {
  uint64_t start = 0;  // counter of the message's first byte (offset = start % size)
  uint64_t end = 0;    // counter just past it: the next tail
};

// Where a message of len bytes goes when the tail is at `tail`. len must be in [0, size].
Placement place(uint64_t tail, uint64_t len, uint64_t size, bool double_mapped);

// Bytes in use between head and tail (tail - head, modular).
inline uint64_t used(uint64_t head, uint64_t tail) { return tail - head; }

// Whether placing p keeps the ring within size bytes given the receiver released up to head.
inline bool fits(const Placement& p, uint64_t head, uint64_t size) { return p.end - head <= size; }

// Credits: messages the sender may still send given sent and acknowledged counts out of `window`.
inline uint64_t credits(uint64_t sent, uint64_t acked, uint64_t window) {
  uint64_t out = sent - acked;
  return out >= window ? 0 : window - out;
}

// Whether a receiver that released `released` and last acknowledged `acked` (messages or bytes)
// should acknowledge now: once `batch` have accumulated.
inline bool ack_due(uint64_t released, uint64_t acked, uint64_t batch) { return released - acked >= batch; }

}  // namespace weft::msg
