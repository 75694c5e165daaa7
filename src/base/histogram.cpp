#include "base/histogram.hpp"

#include <sys/mman.h>
#include <unistd.h>

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

void LogHistogram::add(int64_t value) {
  if (value < 0) value = 0;
  ++counts_[static_cast<size_t>(bucket_of(value))];
  if (count_ == 0 || value < min_) min_ = value;
  if (count_ == 0 || value > max_) max_ = value;
  ++count_;
  sum_ += value;
}

void LogHistogram::merge(const LogHistogram& other) {
  if (other.count_ == 0) return;
  for (int b = bucket_of(other.min_), last = bucket_of(other.max_); b <= last; ++b)
    counts_[static_cast<size_t>(b)] += other.counts_[static_cast<size_t>(b)];
  if (count_ == 0 || other.min_ < min_) min_ = other.min_;
  if (count_ == 0 || other.max_ > max_) max_ = other.max_;
  count_ += other.count_;
  sum_ += other.sum_;
}

// Every counted value lies in [min, max], so only the buckets between theirs can be non-zero: a
// window's few hundred bytes are cleared and scanned instead of the whole 9 KB.
void LogHistogram::release_unused_pages() {
  if (count_ != 0) return;
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(counts_.data());
  const uintptr_t end = begin + sizeof counts_;
  const uintptr_t first = (begin + page - 1) & ~(page - 1), last = end & ~(page - 1);
  // Private anonymous memory (the heap) reads as zero after MADV_DONTNEED: the buckets stay empty.
  if (first < last) (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

void LogHistogram::reset() {
  if (count_ != 0) {
    const int first = bucket_of(min_), last = bucket_of(max_);
    std::fill(counts_.begin() + first, counts_.begin() + last + 1, 0u);
  }
  count_ = 0;
  sum_ = 0;
  min_ = max_ = 0;
}

int64_t LogHistogram::percentile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  if (rank == 1) return min_;  // kept exactly
  if (rank == count_) return max_;
  uint64_t seen = 0;
  for (int b = bucket_of(min_), last = bucket_of(max_); b <= last; ++b) {
    const uint64_t c = counts_[static_cast<size_t>(b)];
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
