#pragma once
// A byte ring of fixed capacity: the send buffer (unacknowledged plus unsent bytes) and the
// receive buffer (unread in-order bytes, with out-of-order data parked past the tail until the
// gap fills). The memory is allocated (uninitialised) on the first write, not with the
// connection: an idle connection costs no buffer at all, so 10,000 of them fit (issue 13).
// After that nothing allocates. It comes from and goes back to ring_memory's cache, so a new
// connection's ring reuses a closed one's buffer, its pages already mapped.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "stack/tcp/ring_memory.hpp"
#include "stack/wire/types.hpp"

namespace weft::stack::tcp {

class ByteRing {
 public:
  explicit ByteRing(size_t capacity) : cap_(std::max<size_t>(capacity, 1)) {}
  ~ByteRing() { ring_memory_give(buf_, cap_); }
  ByteRing(ByteRing&& o) noexcept
      : cap_(o.cap_), buf_(std::exchange(o.buf_, nullptr)), head_(o.head_), size_(o.size_) {}
  ByteRing& operator=(ByteRing&& o) noexcept {
    if (this != &o) {
      ring_memory_give(buf_, cap_);
      cap_ = o.cap_;
      buf_ = std::exchange(o.buf_, nullptr);
      head_ = o.head_;
      size_ = o.size_;
    }
    return *this;
  }

  size_t capacity() const { return cap_; }
  size_t size() const { return size_; }
  size_t free() const { return cap_ - size_; }
  // Bytes of memory held (0 until the first write).
  size_t allocated() const { return buf_ != nullptr ? cap_ : 0; }

  // Gives the memory back (to ring_memory's cache) while the ring holds nothing; a later write
  // takes memory again. For a connection that can hold no more data (TIME-WAIT).
  void release_if_empty() {
    if (size_ != 0 || buf_ == nullptr) return;
    ring_memory_give(std::exchange(buf_, nullptr), cap_);
    head_ = 0;
  }

  // An empty ring starts again at the front of its memory. Only while nothing is parked past the
  // tail (out-of-order data is placed relative to the tail). A receiver that keeps up then lands
  // every segment in the same few hundred KiB, still in its cache, instead of walking the whole
  // buffer (4 MiB for `weft stack`, as large as this machine's L2) and writing to lines that
  // went cold; nor does a segment straddle the wrap point.
  void rewind_if_empty() {
    if (size_ == 0) head_ = 0;
  }

  // Appends up to free() bytes; returns how many.
  size_t push(wire::Bytes data) {
    const size_t n = std::min(data.size(), free());
    copy_in(size_, data.first(n));
    size_ += n;
    return n;
  }

  // Writes `data` at `offset` bytes past the tail without making it readable (out-of-order
  // data); bytes that would not fit in free() are cut off. Returns how many were written.
  size_t write_past_tail(size_t offset, wire::Bytes data) {
    if (offset >= free()) return 0;
    const size_t n = std::min(data.size(), free() - offset);
    copy_in(size_ + offset, data.first(n));
    return n;
  }

  // Makes `n` bytes already written past the tail readable.
  void commit(size_t n) {
    ensure();  // never readable bytes without memory behind them
    size_ += std::min(n, free());
  }

  // Removes the readable byte at `offset`: the bytes after it, readable ones and the `past` bytes
  // written past the tail, move down by one (the urgent byte taken out of the stream; rare, so
  // byte by byte). Out-of-order data past the tail keeps its place relative to the new tail.
  void erase(size_t offset, size_t past) {
    if (offset >= size_) return;
    const size_t end = std::min(size_ + past, cap_);
    for (size_t i = offset; i + 1 < end; ++i) buf_[(head_ + i) % cap_] = buf_[(head_ + i + 1) % cap_];
    --size_;
  }

  // The free space past the tail, [offset, free()), as up to two writable pieces (zero-copy
  // writes: fill them, then commit()).
  std::pair<wire::MutBytes, wire::MutBytes> reserve(size_t offset = 0) {
    if (offset >= free()) return {};
    ensure();
    const size_t len = free() - offset;
    const size_t start = (head_ + size_ + offset) % cap_;
    const size_t first = std::min(len, cap_ - start);
    return {wire::MutBytes(buf_ + start, first), wire::MutBytes(buf_, len - first)};
  }

  // Copies up to out.size() bytes from the head and removes them.
  size_t pop(wire::MutBytes out) {
    const size_t n = std::min(out.size(), size_);
    const auto [a, b] = peek(0, n);
    if (!a.empty()) std::memcpy(out.data(), a.data(), a.size());
    if (!b.empty()) std::memcpy(out.data() + a.size(), b.data(), b.size());
    consume(n);
    return n;
  }

  void consume(size_t n) {
    n = std::min(n, size_);
    head_ = (head_ + n) % cap_;
    size_ -= n;
  }

  // The readable bytes [offset, offset + len) as up to two pieces (the ring may wrap).
  std::pair<wire::Bytes, wire::Bytes> peek(size_t offset, size_t len) const {
    if (offset >= size_) return {};
    len = std::min(len, size_ - offset);
    const size_t start = (head_ + offset) % cap_;
    const size_t first = std::min(len, cap_ - start);
    return {wire::Bytes(buf_ + start, first), wire::Bytes(buf_, len - first)};
  }

 private:
  void copy_in(size_t offset, wire::Bytes data) {
    if (data.empty()) return;
    ensure();
    const size_t start = (head_ + offset) % cap_;
    const size_t first = std::min(data.size(), cap_ - start);
    // Data a device already read into this very place (Interface::place_large_frame) stays.
    if (buf_ + start != data.data()) std::memcpy(buf_ + start, data.data(), first);
    if (first < data.size()) std::memcpy(buf_, data.data() + first, data.size() - first);
  }
  void ensure() {
    if (buf_ == nullptr) buf_ = ring_memory_take(cap_);
  }

  size_t cap_;
  uint8_t* buf_ = nullptr;  // from ring_memory_take, given back in the destructor
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace weft::stack::tcp
