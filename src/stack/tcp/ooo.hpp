#pragma once
// Ranges of sequence space in a small fixed array kept sorted and merged. The receiver keeps the
// out-of-order data held past rcv_nxt in one (OooRanges; also what it reports in SACK blocks, RFC
// 2018): when full, a segment that would need a new range is dropped (the sender retransmits it).
// The sender keeps what the peer SACKed in another (SackScoreboard, RFC 6675): when full, a block
// that would need a new range is ignored (that data is then retransmitted as if not SACKed).
#include <array>
#include <cstdint>

#include "stack/tcp/seq.hpp"

namespace weft::stack::tcp {

struct SeqRange {
  uint32_t left = 0;   // first byte
  uint32_t right = 0;  // one past the last
};

template <size_t N>
class SeqRangeSet {
 public:
  static constexpr size_t kMax = N;

  size_t count() const { return n_; }
  const SeqRange& operator[](size_t i) const { return r_[i]; }
  bool empty() const { return n_ == 0; }
  void clear() { n_ = 0; }

  // Adds [left, right); returns false if that needs a new range and the array is full.
  bool add(uint32_t left, uint32_t right) {
    if (!seq_lt(left, right)) return true;
    size_t i = 0;
    while (i < n_ && seq_lt(r_[i].right, left)) ++i;  // ranges entirely before, not touching
    size_t j = i;
    while (j < n_ && seq_le(r_[j].left, right)) {  // ranges overlapping or touching
      left = seq_min(left, r_[j].left);
      right = seq_max(right, r_[j].right);
      ++j;
    }
    if (j == i) {  // a new range at i
      if (n_ == kMax) return false;
      for (size_t k = n_; k > i; --k) r_[k] = r_[k - 1];
      ++n_;
    } else {  // ranges [i, j) merge into i
      for (size_t k = j; k < n_; ++k) r_[i + 1 + k - j] = r_[k];
      n_ -= j - i - 1;
    }
    r_[i] = {left, right};
    last_added_ = i;
    return true;
  }

  // If the first range starts at or before `seq`, removes it and returns its right edge;
  // otherwise returns `seq` (nothing became contiguous).
  uint32_t take_contiguous(uint32_t seq) {
    if (n_ == 0 || seq_gt(r_[0].left, seq)) return seq;
    const uint32_t right = seq_max(seq, r_[0].right);
    for (size_t k = 1; k < n_; ++k) r_[k - 1] = r_[k];
    --n_;
    if (last_added_ > 0) --last_added_;  // it moved down with the others
    return right;
  }

  // Drops everything before `seq` (cut ranges that straddle it).
  void trim_below(uint32_t seq) {
    size_t k = 0;
    while (k < n_ && seq_le(r_[k].right, seq)) ++k;
    if (k > 0) {
      for (size_t i = k; i < n_; ++i) r_[i - k] = r_[i];
      n_ -= k;
      last_added_ = 0;
    }
    if (n_ > 0 && seq_lt(r_[0].left, seq)) r_[0].left = seq;
  }

  // Bytes covered by all ranges.
  uint32_t bytes() const {
    uint32_t b = 0;
    for (size_t i = 0; i < n_; ++i) b += r_[i].right - r_[i].left;
    return b;
  }

  // Index of the range that holds all of [left, right), or count() when none does.
  size_t covering(uint32_t left, uint32_t right) const {
    for (size_t i = 0; i < n_; ++i)
      if (seq_le(r_[i].left, left) && seq_le(right, r_[i].right)) return i;
    return n_;
  }

  // Whether any range shares a byte with [left, right).
  bool overlaps(uint32_t left, uint32_t right) const {
    for (size_t i = 0; i < n_; ++i)
      if (seq_lt(r_[i].left, right) && seq_lt(left, r_[i].right)) return true;
    return false;
  }

  // The range most recently added or extended (the first SACK block, RFC 2018 section 4).
  size_t last_added() const { return last_added_ < n_ ? last_added_ : 0; }

 private:
  std::array<SeqRange, N> r_{};
  size_t n_ = 0;
  size_t last_added_ = 0;
};

using OooRanges = SeqRangeSet<16>;
// 64 ranges: at 5 % loss a 256 KiB window of ~180 segments has about 9 holes; room for bursts.
using SackScoreboard = SeqRangeSet<64>;

}  // namespace weft::stack::tcp
