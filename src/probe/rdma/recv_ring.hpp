#pragma once
// How many receive buffers the probe engine keeps posted. Each buffer holds a whole MTU plus the
// GRH (4,160 B on rxe), so posting the QP's full capacity (16,384) cost 68 MB of RSS whatever the
// mesh. The engine posts what its peers need instead: per target it probes, room for the answers
// of every probe within its timeout (recv_per_target); per prober it answers, kRecvPerPeer; never
// fewer than kRecvFloor, never more than the QP's capacity. Buffers are
// re-posted after every drain of the CQ, so a peer needs room only for what arrives between two
// drains; when one drain takes more than half of what is posted (a burst, a stalled loop), the ring
// doubles. A UD datagram that finds no posted buffer is dropped by the device, so the ring only
// ever grows, and grows early. Pure arithmetic, unit-tested (tests/probe_rdma/recv_ring_test.cpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace weft::probe {

inline constexpr uint32_t kRecvFloor = 512;
inline constexpr uint32_t kRecvPerPeer = 16;
inline constexpr uint32_t kRecvChunk = 256;  // buffers per registered memory chunk

// Receives one target can have coming at once: the PONG and follow-up of every probe still within
// its timeout (timeout / interval of them), at least kRecvPerPeer, at most `capacity`.
inline uint32_t recv_per_target(int64_t interval_ns, int64_t timeout_ns, uint32_t capacity) {
  const uint64_t in_flight = interval_ns > 0 ? static_cast<uint64_t>(timeout_ns / interval_ns) + 1 : capacity;
  return static_cast<uint32_t>(
      std::min<uint64_t>(std::max<uint64_t>(kRecvPerPeer, 2 * in_flight), std::max<uint32_t>(capacity, 1)));
}

// The ring size for `targets` targets (each needing per_target receives) and `probers` peers that
// probe this engine: a whole number of chunks (so the ring grows by registering chunks), at least
// kRecvFloor, clamped to capacity.
inline uint32_t recv_ring_for_peers(size_t targets, uint32_t per_target, size_t probers, uint32_t capacity) {
  const uint64_t want =
      std::max<uint64_t>(kRecvFloor, uint64_t{per_target} * targets + uint64_t{kRecvPerPeer} * probers);
  const uint64_t chunks = (want + kRecvChunk - 1) / kRecvChunk;
  return static_cast<uint32_t>(std::min<uint64_t>(chunks * kRecvChunk, capacity));
}

// After a drain that consumed `taken` receives out of `posted`: the size to grow to (posted if
// there was room to spare).
inline uint32_t recv_ring_after_drain(uint32_t posted, size_t taken, uint32_t capacity) {
  if (taken * 2 <= posted) return posted;
  return std::min<uint32_t>(std::max<uint32_t>(posted, kRecvChunk) * 2, capacity);
}

}  // namespace weft::probe
