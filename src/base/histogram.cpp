#include "base/histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace weft {

int LogHistogram::bucket_of(int64_t value) {
  if (value < kSub) return value < 0 ? 0 : static_cast<int>(value);
  const auto v = static_cast<uint64_t>(value);
  const int exp = 63 - std::countl_zero(v);  // >= kSubBits
  if (exp >= kMaxBits) return kBuckets - 1;
  const int shift = exp - kSubBits;
  const int sub = static_cast<int>(v >> shift) - kSub;  // 0 .. kSub-1
  return kSub + shift * kSub + sub;
}

int64_t LogHistogram::bucket_low(int bucket) {
  if (bucket < kSub) return bucket;
  const int shift = (bucket - kSub) / kSub;
  const int sub = (bucket - kSub) % kSub;
  return static_cast<int64_t>(kSub + sub) << shift;
}

int64_t LogHistogram::bucket_high(int bucket) {
  if (bucket < kSub) return bucket + 1;
  const int shift = (bucket - kSub) / kSub;
  return bucket_low(bucket) + (int64_t{1} << shift);
}

uint8_t LogHistogram::new_row() {
  // Grown a few rows at a time rather than doubled: a window's rows are most of its memory, and
  // every window keeps its capacity across reset().
  if (rows_.size() == rows_.capacity()) rows_.reserve(std::min<size_t>(rows_.size() + 4, kRows));
  rows_.emplace_back();  // zeroed
  return static_cast<uint8_t>(rows_.size());
}

// The path of every sample: one byte read finds the row. A sample in a row not stored yet goes
// to add_in_new_row(), a call the compiler keeps off this path (no registers saved for it here).
void LogHistogram::add(int64_t value) {
  if (value < 0) value = 0;
  // bucket_of() as row and column: the power of two (exp) is the row, the kSubBits bits below the
  // leading one the column.
  size_t r = 0, c = static_cast<size_t>(value);
  if (value >= kSub) {
    const auto v = static_cast<uint64_t>(value);
    const int exp = 63 - std::countl_zero(v);
    if (exp >= kMaxBits) [[unlikely]] {
      r = kRows - 1, c = kSub - 1;
    } else {
      r = static_cast<size_t>(exp - kSubBits + 1);
      c = static_cast<size_t>(v >> (exp - kSubBits)) & (kSub - 1);
    }
  }
  const uint8_t i = row_of_[r];
  if (i == 0) [[unlikely]] {
    add_in_new_row(value, static_cast<int>(r * kSub + c));
    return;
  }
  ++rows_[i - 1u][c];
  note(value);
}

void LogHistogram::add_in_new_row(int64_t value, int b) {
  ++row(b >> kSubBits)[static_cast<size_t>(b & (kSub - 1))];
  note(value);
}

// Branch-free: an empty histogram's min_ and max_ are the identities of min and max over the
// values add() passes (>= 0), so the first value needs no test of count_.
void LogHistogram::note(int64_t value) {
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
  ++count_;
  sum_ += value;
}

void LogHistogram::merge(const LogHistogram& other) {
  if (other.count_ == 0) return;
  for (int r = 0; r < kRows; ++r) {
    const uint8_t o = other.row_of_[static_cast<size_t>(r)];
    if (o == 0) continue;
    const Row& from = other.rows_[o - 1u];
    Row& to = row(r);
    for (size_t i = 0; i < from.size(); ++i) to[i] += from[i];
  }
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  count_ += other.count_;
  sum_ += other.sum_;
}

// Keeps the rows' memory (see the header): the next add() of a power of two takes a zeroed row.
void LogHistogram::reset() {
  rows_.clear();
  row_of_.fill(0);
  count_ = 0;
  sum_ = 0;
  min_ = kEmptyMin;
  max_ = 0;
}

int64_t LogHistogram::percentile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  if (rank == 1) return min_;  // kept exactly
  if (rank == count_) return max_;
  // Every counted value lies in [min, max], so only the buckets between theirs can be non-zero.
  uint64_t seen = 0;
  for (int b = bucket_of(min_), last = bucket_of(max_); b <= last; ++b) {
    if (row_of_[static_cast<size_t>(b >> kSubBits)] == 0) {  // a row never sampled: 64 empty buckets
      b |= kSub - 1;
      continue;
    }
    const uint64_t c = at(b);
    if (seen + c < rank) {
      seen += c;
      continue;
    }
    if (b == kBuckets - 1 && max_ >= bucket_high(b)) return max_;  // the overflow bucket
    // The part of the bucket samples can be in, [lo, hi): the bucket clipped to [min, max]. Its c
    // samples are taken as spread evenly, each in the middle of its 1/c of it.
    const int64_t lo = std::max(bucket_low(b), min_);
    const int64_t hi = std::min(bucket_high(b), max_ + 1);
    const uint64_t k = rank - seen;  // 1..c
    const double frac = (static_cast<double>(k) - 0.5) / static_cast<double>(c);
    return lo + static_cast<int64_t>(frac * static_cast<double>(hi - lo));
  }
  return max_;
}

}  // namespace weft
