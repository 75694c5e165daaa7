#pragma once
// A fixed-memory log-bucket histogram of non-negative integers (nanoseconds here).
//
// Values below 2^kSubBits are counted exactly; above, each power of two is split into 2^kSubBits
// equal buckets, so a bucket is at most 1/64 of its lower bound wide. Memory is fixed (about 9 KB)
// whatever the number of samples; nothing allocates.
//
// A percentile is interpolated inside the bucket that holds its rank: the bucket's c samples are
// taken as spread evenly over the part of the bucket that can hold samples ([min, max] clipped to
// the bucket), each in the middle of its 1/c of it, and rank k of them (1..c) is reported there.
// The estimate always lies in the same bucket as the exact nearest-rank sample, so its relative
// error is below 1/64 (1.6%) whatever the data (the worst case: many samples at one edge of a
// bucket); a lone sample in its bucket is reported at the middle (within 1/128), and where samples
// fill buckets densely, as RTTs do at a percentile that matters, the error is far smaller (under
// 0.1%, tests/base/histogram_test.cpp). Reporting every bucket's midpoint (before issue 17) made
// every percentile of a busy window one of a few fixed values 1.6% apart (p50 = 2,572.288 us in
// every run) and gave the same p50 to quantities that differed by 10 us.

#include <array>
#include <cstdint>

namespace weft {

class LogHistogram {
 public:
  static constexpr int kSubBits = 6;
  static constexpr int kSub = 1 << kSubBits;
  static constexpr int kMaxBits = 40;  // values >= 2^40 ns (~18 minutes) share the last bucket
  static constexpr int kBuckets = kSub + (kMaxBits - kSubBits) * kSub;

  void add(int64_t value);
  void merge(const LogHistogram& other);
  void reset();
  // For an empty histogram that lives long (a prober's windows, one per target): gives the whole
  // memory pages inside its buckets back to the kernel. They read as zero, as an empty
  // histogram's buckets do, and take no memory until a sample lands in them; RTTs fill a few of
  // the 35 octaves, so most of the 9 KB stays unbacked (issue 17, RSS). reset() clears only the
  // buckets between min and max, so it never touches them again. One madvise call; no-op if not empty.
  void release_unused_pages();

  uint64_t count() const { return count_; }
  int64_t min() const { return count_ ? min_ : 0; }
  int64_t max() const { return count_ ? max_ : 0; }
  int64_t mean() const { return count_ ? static_cast<int64_t>(sum_ / static_cast<__int128>(count_)) : 0; }
  // Nearest-rank percentile, q in [0, 1]: the value of rank ceil(q * count) (at least 1),
  // interpolated inside its bucket (see above). The first rank is min(), the last max().
  int64_t percentile(double q) const;

  // Bucket arithmetic, exposed for tests.
  static int bucket_of(int64_t value);
  static int64_t bucket_low(int bucket);
  static int64_t bucket_high(int bucket);  // exclusive

 private:
  std::array<uint32_t, kBuckets> counts_{};
  uint64_t count_ = 0;
  __int128 sum_ = 0;
  int64_t min_ = 0;
  int64_t max_ = 0;
};

}  // namespace weft
