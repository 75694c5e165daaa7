#pragma once
// Memory for ByteRing buffers, kept for reuse when a ring goes away. A connection's rings are
// allocated on its first write and were freed with it: a server that takes a new connection per
// request (nginx with `Connection: close`) allocated and freed two 1 MiB buffers per request, and
// glibc served them from the top of the heap, trimmed it again on free and page-faulted the
// touched pages back in on the next allocation (a third of such a server's CPU on weft). Freed
// buffers now wait here, by capacity, up to kRingCacheBytes in all, and the next ring of that
// capacity takes one: its pages are already mapped. Thread-safe (its own small lock): stacks on
// several threads may share it.
#include <cstddef>
#include <cstdint>

namespace weft::stack::tcp {

inline constexpr size_t kRingCacheBytes = size_t{64} << 20;

// A buffer of exactly `capacity` bytes (uninitialised): a cached one when there is one.
uint8_t* ring_memory_take(size_t capacity);
// Gives a buffer from ring_memory_take back: cached while the cache has room, else freed.
void ring_memory_give(uint8_t* p, size_t capacity);
// Bytes the cache holds now (tests).
size_t ring_memory_cached();

}  // namespace weft::stack::tcp
