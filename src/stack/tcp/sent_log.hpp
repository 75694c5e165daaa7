#pragma once
// What the sender has in flight, one record per transmitted segment, for RACK (RFC 8985): each
// record has its sequence range, when it was last (re)transmitted and whether it was SACKed,
// deemed lost, or retransmitted since it was deemed lost (Linux's skb scoreboard bits, kept in a
// ring: nothing is allocated per segment). The ring starts small and doubles as records pile up,
// to at most the capacity the connection was made with: a short response keeps a few hundred
// bytes, not the 50 KB a full 1 MiB send ring may need.
//
// Records are kept in sequence order and cover [SND.UNA, SND.MAX) without gaps. Retransmissions
// and SACK blocks need not fall on the original segments' boundaries, so records are split where
// they do not. When the ring is full, new data merges into the last record (which then keeps the
// older send time: at worst a spurious retransmission) and a split is skipped (the whole record
// is treated as resent, or not SACKed: at worst a retransmission of SACKed data or an RTO).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "stack/tcp/seq.hpp"

namespace weft::stack::tcp {

struct SentSeg {
  static constexpr uint8_t kSacked = 1;       // covered by a SACK block
  static constexpr uint8_t kLost = 2;         // deemed lost (RACK or RFC 6675 IsLost)
  static constexpr uint8_t kRetrans = 4;      // retransmitted since it was deemed lost (in flight again)
  static constexpr uint8_t kEverRetrans = 8;  // retransmitted at least once: its RTT is ambiguous

  uint32_t start = 0;
  uint32_t end = 0;  // one past the last sequence number (a FIN counts)
  int64_t xmit_ns = 0;
  uint8_t flags = 0;

  uint32_t len() const { return end - start; }
  bool has(uint8_t f) const { return (flags & f) != 0; }
};

class SentLog {
 public:
  // The records are allocated on the first append (an idle connection holds none), kFirst of
  // them, doubled while the ring is full, up to `capacity`.
  static constexpr size_t kFirst = 16;
  explicit SentLog(size_t capacity) : cap_(capacity < 4 ? 4 : capacity) {}

  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  size_t capacity() const { return cap_; }
  size_t allocated() const { return buf_ ? alloc_ * sizeof(SentSeg) : 0; }
  SentSeg& operator[](size_t i) { return buf_[slot(i)]; }
  const SentSeg& operator[](size_t i) const { return buf_[slot(i)]; }
  void clear() { head_ = n_ = 0; }
  // Frees the records while none is kept (a later append allocates again).
  void release_if_empty() {
    if (n_ != 0) return;
    buf_.reset();
    head_ = alloc_ = 0;
  }

  // A first transmission of [start, end), right after the last record.
  void append(uint32_t start, uint32_t end, int64_t now_ns) {
    if (!seq_lt(start, end)) return;
    if (!room()) {  // full: the last record grows (see above)
      (*this)[n_ - 1].end = end;
      return;
    }
    buf_[slot(n_)] = SentSeg{start, end, now_ns, 0};
    ++n_;
  }

  // Index of the first record whose end is past `seq` (size() when none).
  size_t find(uint32_t seq) const {
    size_t lo = 0, hi = n_;
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (seq_le((*this)[mid].end, seq))
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  }

  // Makes a record start at `seq` by splitting the one that holds it (both halves keep its time
  // and flags). Returns false when the ring is full and a split was needed.
  bool split_at(uint32_t seq) {
    const size_t i = find(seq);
    if (i == n_ || !seq_gt(seq, (*this)[i].start)) return true;  // past the end or already a boundary
    if (!room()) return false;
    for (size_t k = n_; k > i + 1; --k) (*this)[k] = (*this)[k - 1];
    ++n_;
    (*this)[i + 1] = (*this)[i];
    (*this)[i + 1].start = seq;
    (*this)[i].end = seq;
    return true;
  }

  // Drops what the cumulative ACK `una` covers (and cuts a record that straddles it).
  void trim_below(uint32_t una) {
    while (n_ > 0 && seq_le((*this)[0].end, una)) {
      head_ = (head_ + 1) % alloc_;
      --n_;
    }
    if (n_ > 0 && seq_lt((*this)[0].start, una)) (*this)[0].start = una;
  }

 private:
  size_t slot(size_t i) const { return (head_ + i) % alloc_; }
  // Whether one more record fits, growing the ring (in order, from slot 0) when it is full and
  // below the capacity. A failed allocation leaves the ring as it was (then it is full).
  bool room() {
    if (buf_ && n_ < alloc_) return true;
    const size_t want = !buf_ ? std::min(kFirst, cap_) : std::min(alloc_ * 2, cap_);
    if (buf_ && want == alloc_) return false;
    auto* p = static_cast<SentSeg*>(std::malloc(want * sizeof(SentSeg)));  // implicit-lifetime type
    if (p == nullptr) return buf_ && n_ < alloc_;
    for (size_t i = 0; i < n_; ++i) p[i] = (*this)[i];
    buf_.reset(p);
    alloc_ = want;
    head_ = 0;
    return true;
  }

  size_t cap_;
  size_t alloc_ = 0;  // records buf_ holds
  struct Free {
    void operator()(SentSeg* p) const { std::free(p); }
  };
  std::unique_ptr<SentSeg[], Free> buf_;
  size_t head_ = 0;
  size_t n_ = 0;
};

}  // namespace weft::stack::tcp
