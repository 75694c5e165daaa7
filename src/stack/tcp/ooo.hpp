#pragma once
// Out-of-order ranges held past rcv_nxt, in sequence space: a small fixed array kept sorted and
// merged. They are also what the receiver reports in SACK blocks (RFC 2018). When the array is
// full a segment that would need a new range is dropped (the sender retransmits it).
#include <array>
#include <cstdint>

#include "stack/tcp/seq.hpp"

namespace weft::stack::tcp {

struct SeqRange {
  uint32_t left = 0;   // first byte
  uint32_t right = 0;  // one past the last
};

class OooRanges {
 public:
  static constexpr size_t kMax = 16;

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
    return right;
  }

  // The range most recently added or extended (the first SACK block, RFC 2018 section 4).
  size_t last_added() const { return last_added_ < n_ ? last_added_ : 0; }

 private:
  std::array<SeqRange, kMax> r_{};
  size_t n_ = 0;
  size_t last_added_ = 0;
};

}  // namespace weft::stack::tcp
