#pragma once
// A log-bucket histogram of non-negative integers (nanoseconds here).
//
// Values below 2^kSubBits are counted exactly; above, each power of two is split into 2^kSubBits
// equal buckets, so a bucket is at most 1/64 of its lower bound wide.
//
// Memory (issue 17, RSS): the 2,240 buckets form 35 rows of 64, one per power of two (row 0: the
// exact values 0..63). Only the rows that hold samples are stored, 256 bytes each, in a vector in
// the order they were first used; a row index maps a power of two to its row. RTTs fill a handful
// of rows (a loopback RTT of 10 us-5 ms: about ten), so a histogram takes 1-3 KB instead of the
// 9 KB a dense array took, and an empty one (an idle window) none. reset() empties the rows but
// keeps their memory, so a window reused for the next interval allocates again only when it sees
// more powers of two at once than it ever did: never per sample in steady state, and at most 35
// rows (the old 9 KB) in all. Buckets, counts and percentiles are the same as the dense array's.
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
#include <cstddef>
#include <cstdint>
#include <vector>

namespace weft {

class LogHistogram {
 public:
  static constexpr int kSubBits = 6;
  static constexpr int kSub = 1 << kSubBits;
  static constexpr int kMaxBits = 40;  // values >= 2^40 ns (~18 minutes) share the last bucket
  static constexpr int kRows = 1 + (kMaxBits - kSubBits);  // row 0 exact, then one per power of two
  static constexpr int kBuckets = kRows * kSub;

  void add(int64_t value);
  void merge(const LogHistogram& other);
  void reset();

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
  // Rows holding storage (for tests and memory accounting): at most kRows.
  size_t rows_stored() const { return rows_.size(); }

 private:
  using Row = std::array<uint32_t, kSub>;
  // The count of a bucket; 0 for a row never stored.
  uint32_t at(int bucket) const {
    const uint8_t r = row_of_[static_cast<size_t>(bucket >> kSubBits)];
    return r ? rows_[r - 1u][static_cast<size_t>(bucket & (kSub - 1))] : 0;
  }
  // The storage of a row, made (zeroed) the first time a sample lands in it.
  Row& row(int r) {
    uint8_t& i = row_of_[static_cast<size_t>(r)];
    if (i == 0) [[unlikely]]
      i = new_row();
    return rows_[i - 1u];
  }
  uint8_t new_row();
  [[gnu::noinline, gnu::cold]] void add_in_new_row(int64_t value, int bucket);
  void note(int64_t value);  // min, max, count and sum of an added value

  std::vector<Row> rows_;                // rows in the order first used since the last reset()
  std::array<uint8_t, kRows> row_of_{};  // power-of-two row -> 1 + index in rows_, 0 = not stored
  uint64_t count_ = 0;
  __int128 sum_ = 0;
  // Empty: min_ above and max_ at the bottom of every value add() takes (min() and max() say 0).
  static constexpr int64_t kEmptyMin = INT64_MAX;
  int64_t min_ = kEmptyMin;
  int64_t max_ = 0;
};

}  // namespace weft
