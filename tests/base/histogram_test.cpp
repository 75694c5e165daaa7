// The log-bucket histogram's percentiles against exact ones (nearest rank on sorted samples).
#include "base/histogram.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace {

int64_t exact_percentile(std::vector<int64_t> v, double q) {
  std::sort(v.begin(), v.end());
  auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  rank = std::clamp<size_t>(rank, 1, v.size());
  return v[rank - 1];
}

// Relative error of each percentile against the exact one, at most `bound` (RTT-like data fills
// buckets evenly, so interpolation inside the bucket is much closer than the 1/64 worst case).
void check_accuracy(const std::vector<int64_t>& samples, double bound = 0.002) {
  weft::LogHistogram h;
  for (auto s : samples) h.add(s);
  ASSERT_EQ(h.count(), samples.size());
  for (double q : {0.0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0}) {
    const int64_t exact = exact_percentile(samples, q);
    const int64_t approx = h.percentile(q);
    const double err = exact == 0
                           ? std::abs(static_cast<double>(approx))
                           : std::abs(static_cast<double>(approx - exact)) / static_cast<double>(exact);
    EXPECT_LE(err, bound) << "q=" << q << " exact=" << exact << " approx=" << approx;
    // The guarantee whatever the data: the estimate is in the exact value's bucket.
    EXPECT_EQ(weft::LogHistogram::bucket_of(approx), weft::LogHistogram::bucket_of(exact)) << q;
  }
  EXPECT_EQ(h.min(), *std::min_element(samples.begin(), samples.end()));
  EXPECT_EQ(h.max(), *std::max_element(samples.begin(), samples.end()));
}

TEST(LogHistogram, PercentilesCloseLogNormal) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> d(std::log(50'000.0), 1.0);  // RTTs around 50 us, long tail
  std::vector<int64_t> v;
  for (int i = 0; i < 200'000; ++i) v.push_back(static_cast<int64_t>(d(rng)));
  check_accuracy(v);
}

TEST(LogHistogram, PercentilesCloseWideUniform) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> d(0, 5'000'000'000);  // 0 .. 5 s
  std::vector<int64_t> v;
  for (int i = 0; i < 100'000; ++i) v.push_back(d(rng));
  check_accuracy(v, 0.01);  // the lowest percentiles fall in buckets of one or two samples
}

TEST(LogHistogram, PercentilesCloseBimodalAndSmall) {
  std::mt19937_64 rng(9);
  std::vector<int64_t> v;
  for (int i = 0; i < 5'000; ++i) v.push_back(static_cast<int64_t>(rng() % 200));  // exact region
  for (int i = 0; i < 5'000; ++i) v.push_back(1'000'000 + static_cast<int64_t>(rng() % 10'000));
  check_accuracy(v);
}

TEST(LogHistogram, EveryBucketBoundIsTight) {
  // A bucket is never wider than 1/64 of its lower bound: an estimate inside the exact value's
  // bucket is within 1/64 of it.
  for (int b = weft::LogHistogram::kSub; b < weft::LogHistogram::kBuckets; ++b) {
    const int64_t lo = weft::LogHistogram::bucket_low(b), hi = weft::LogHistogram::bucket_high(b);
    ASSERT_LT(lo, hi);
    EXPECT_LE(static_cast<double>(hi - lo) / static_cast<double>(lo), 1.0 / 64 + 1e-12) << b;
    EXPECT_EQ(weft::LogHistogram::bucket_of(lo), b);
    EXPECT_EQ(weft::LogHistogram::bucket_of(hi - 1), b);
    if (b + 1 < weft::LogHistogram::kBuckets) {
      EXPECT_EQ(weft::LogHistogram::bucket_low(b + 1), hi);
    }
  }
}

// Issue 17: a percentile used to be its bucket's midpoint, so at 2.5 ms every p50 read 2,572.288 us
// (buckets there are 32.768 us wide) and two quantities 10 us apart read the same.
TEST(LogHistogram, PercentilesAreNotStuckToBucketPoints) {
  const int64_t lo = weft::LogHistogram::bucket_low(weft::LogHistogram::bucket_of(2'560'000));
  const int64_t width = weft::LogHistogram::bucket_high(weft::LogHistogram::bucket_of(2'560'000)) - lo;
  ASSERT_EQ(width, 32'768);
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<int64_t> d(2'000'000, 3'000'000);  // a 0-5 ms hold's middle, say
  std::vector<int64_t> a, b;
  for (int i = 0; i < 20'000; ++i) {
    const int64_t v = d(rng);
    a.push_back(v);
    b.push_back(v + 10'000);  // the same plus 10 us
  }
  weft::LogHistogram ha, hb;
  for (auto v : a) ha.add(v);
  for (auto v : b) hb.add(v);
  for (double q : {0.25, 0.5, 0.9, 0.99}) {
    const auto ea = static_cast<double>(exact_percentile(a, q));
    const auto eb = static_cast<double>(exact_percentile(b, q));
    EXPECT_NEAR(static_cast<double>(ha.percentile(q)), ea, 1'000.0) << q;  // 1 us, not 16
    EXPECT_NEAR(static_cast<double>(hb.percentile(q)), eb, 1'000.0) << q;
    EXPECT_NEAR(static_cast<double>(hb.percentile(q) - ha.percentile(q)), 10'000.0, 2'000.0) << q;
  }
  // A single sample anywhere, and min and max, come back exactly.
  weft::LogHistogram one;
  one.add(2'572'000);
  EXPECT_EQ(one.percentile(0.5), 2'572'000);
  EXPECT_EQ(ha.percentile(0.0), *std::min_element(a.begin(), a.end()));
  EXPECT_EQ(ha.percentile(1.0), *std::max_element(a.begin(), a.end()));
}

// The documented worst case: every sample at one edge of its bucket. Interpolation spreads them
// over the bucket, so the estimate may be off by up to one bucket width (< 1/64), never more.
TEST(LogHistogram, WorstCaseErrorStaysInsideTheBucket) {
  const int b = weft::LogHistogram::bucket_of(1'000'000);
  const int64_t lo = weft::LogHistogram::bucket_low(b), hi = weft::LogHistogram::bucket_high(b);
  weft::LogHistogram h;
  h.add(1'000);
  for (int i = 0; i < 1'000; ++i) h.add(lo);  // all at the bucket's lower edge
  h.add(50'000'000);
  const int64_t p = h.percentile(0.99);  // rank 991 of 1,002: near the top of the bucket
  EXPECT_GE(p, lo);
  EXPECT_LT(p, hi);
  EXPECT_GT(static_cast<double>(p - lo) / static_cast<double>(lo), 1.0 / 128);  // worse than a midpoint
  EXPECT_LT(static_cast<double>(p - lo) / static_cast<double>(lo), 1.0 / 64);
  // Random shapes (clusters, gaps, ties) never leave the exact value's bucket.
  std::mt19937_64 rng(5);
  for (int round = 0; round < 200; ++round) {
    std::vector<int64_t> v;
    const int clusters = 1 + static_cast<int>(rng() % 4);
    for (int c = 0; c < clusters; ++c) {
      const auto centre = static_cast<int64_t>(rng() % 100'000'000);
      const auto spread = static_cast<int64_t>(rng() % 2'000) + 1;
      const int n = 1 + static_cast<int>(rng() % 300);
      for (int i = 0; i < n; ++i)
        v.push_back(centre + static_cast<int64_t>(rng() % static_cast<uint64_t>(spread)));
    }
    check_accuracy(v, 1.0 / 64);
  }
}

TEST(LogHistogram, EmptyNegativeHugeAndMerge) {
  weft::LogHistogram h;
  EXPECT_EQ(h.percentile(0.5), 0);
  EXPECT_EQ(h.mean(), 0);
  h.add(-5);  // clamped to 0
  EXPECT_EQ(h.min(), 0);
  h.add(int64_t{1} << 50);  // beyond the last bucket: still counted, max exact
  EXPECT_EQ(h.max(), int64_t{1} << 50);
  EXPECT_EQ(h.percentile(1.0), int64_t{1} << 50);
  weft::LogHistogram a, b;
  for (int i = 1; i <= 100; ++i) a.add(i * 1000);
  for (int i = 101; i <= 200; ++i) b.add(i * 1000);
  a.merge(b);
  EXPECT_EQ(a.count(), 200u);
  EXPECT_EQ(a.min(), 1000);
  EXPECT_EQ(a.max(), 200'000);
  EXPECT_EQ(a.mean(), 100'500);
  EXPECT_NEAR(static_cast<double>(a.percentile(0.5)), 100'000.0, 1000.0);
  a.reset();
  EXPECT_EQ(a.count(), 0u);
}

// reset() clears only the buckets between min and max, and percentiles scan only those: a
// histogram reused after values across its whole range must forget them all.
TEST(LogHistogram, ResetForgetsEverythingAndReuseIsExact) {
  weft::LogHistogram h;
  for (int b = 0; b < weft::LogHistogram::kBuckets; ++b)
    h.add(weft::LogHistogram::bucket_low(b));  // every bucket
  h.reset();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.percentile(0.5), 0);
  h.add(100);
  h.add(1'000'000);  // the highest rank lies in its bucket only if every bucket between was cleared
  EXPECT_EQ(h.percentile(0.5), 100);
  EXPECT_EQ(h.percentile(1.0), 1'000'000);
  h.reset();
  std::vector<int64_t> second;
  for (int i = 0; i < 1000; ++i) second.push_back(50'000 + i * 7);
  for (auto v : second) h.add(v);
  for (double q : {0.0, 0.5, 0.99, 1.0}) {
    const double exact = static_cast<double>(exact_percentile(second, q));
    EXPECT_LE(std::abs(static_cast<double>(h.percentile(q)) - exact) / exact, 0.01) << q;
  }
  // A merge brings the other's range only; the merged percentiles see both.
  weft::LogHistogram low, high;
  low.add(10);
  high.add(1'000'000);
  high.add(2'000'000);
  low.merge(high);
  EXPECT_EQ(low.percentile(0.0), 10);
  EXPECT_NEAR(static_cast<double>(low.percentile(0.5)), 1'000'000.0, 10'000.0);
  EXPECT_EQ(low.percentile(1.0), 2'000'000);
  low.reset();
  low.add(20);
  EXPECT_EQ(low.percentile(1.0), 20);  // nothing of the merged range is left
  EXPECT_EQ(low.count(), 1u);
}

// The dense histogram this one replaced (issue 17, RSS): every bucket in one array. Kept here as the
// oracle: the row-sparse storage must give the same counts, so the same percentiles, exactly.
class DenseReference {
 public:
  void add(int64_t v) {
    if (v < 0) v = 0;
    ++counts_[static_cast<size_t>(weft::LogHistogram::bucket_of(v))];
    if (count_ == 0 || v < min_) min_ = v;
    if (count_ == 0 || v > max_) max_ = v;
    ++count_;
  }
  int64_t percentile(double q) const {  // the same interpolation, over the dense array
    using H = weft::LogHistogram;
    if (count_ == 0) return 0;
    q = std::clamp(q, 0.0, 1.0);
    auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
    rank = std::clamp<uint64_t>(rank, 1, count_);
    if (rank == 1) return min_;
    if (rank == count_) return max_;
    uint64_t seen = 0;
    for (int b = 0; b < H::kBuckets; ++b) {
      const uint64_t c = counts_[static_cast<size_t>(b)];
      if (seen + c < rank) {
        seen += c;
        continue;
      }
      if (b == H::kBuckets - 1 && max_ >= H::bucket_high(b)) return max_;
      const int64_t lo = std::max(H::bucket_low(b), min_);
      const int64_t hi = std::min(H::bucket_high(b), max_ + 1);
      const double frac = (static_cast<double>(rank - seen) - 0.5) / static_cast<double>(c);
      return lo + static_cast<int64_t>(frac * static_cast<double>(hi - lo));
    }
    return max_;
  }

 private:
  std::vector<uint32_t> counts_ = std::vector<uint32_t>(weft::LogHistogram::kBuckets);
  uint64_t count_ = 0;
  int64_t min_ = 0, max_ = 0;
};

void expect_same_as_dense(const weft::LogHistogram& h, const DenseReference& d, const char* what) {
  for (int i = 0; i <= 1000; ++i) {
    const double q = i / 1000.0;
    ASSERT_EQ(h.percentile(q), d.percentile(q)) << what << " q=" << q;
  }
}

TEST(LogHistogram, RowStorageGivesTheDenseArraysPercentilesExactly) {
  std::mt19937_64 rng(1717);
  std::lognormal_distribution<double> rtt(std::log(2'500'000.0), 0.6);  // a 1-5 ms hold
  std::lognormal_distribution<double> net(std::log(400.0), 0.3);        // loopback "network"
  std::uniform_int_distribution<int64_t> wide(0, int64_t{1} << 42);     // past the last bucket
  for (int shape = 0; shape < 4; ++shape) {
    weft::LogHistogram h;
    DenseReference d;
    for (int i = 0; i < 50'000; ++i) {
      int64_t v = 0;
      switch (shape) {
        case 0:
          v = static_cast<int64_t>(rtt(rng));
          break;
        case 1:
          v = static_cast<int64_t>(net(rng));
          break;
        case 2:
          v = (i % 100 == 0) ? static_cast<int64_t>(rtt(rng)) : static_cast<int64_t>(net(rng));
          break;
        default:
          v = wide(rng) - 1000;
          break;  // some negative, clamped to 0
      }
      h.add(v);
      d.add(v);
    }
    expect_same_as_dense(h, d, "shape");
  }
}

TEST(LogHistogram, MergeAndResetAgreeWithTheDenseArray) {
  std::mt19937_64 rng(3);
  weft::LogHistogram a, b;
  DenseReference both;
  for (int i = 0; i < 5'000; ++i) {  // a: microseconds, b: milliseconds and a few overlaps
    const auto x = static_cast<int64_t>(1'000 + rng() % 50'000);
    const auto y = static_cast<int64_t>((i % 10 ? 1'000'000 : 20'000) + rng() % 4'000'000);
    a.add(x);
    b.add(y);
    both.add(x);
    both.add(y);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), 10'000u);
  expect_same_as_dense(a, both, "merged");
  // Reused after a reset (its rows' memory kept): the new samples alone, again exactly.
  a.reset();
  EXPECT_EQ(a.rows_stored(), 0u);
  DenseReference fresh;
  for (int i = 0; i < 3'000; ++i) {
    const auto v = static_cast<int64_t>(rng() % 100'000'000);
    a.add(v);
    fresh.add(v);
  }
  expect_same_as_dense(a, fresh, "after reset");
}

// What the rows are for: an RTT window stores only the powers of two its samples fall in.
TEST(LogHistogram, StoresOnlyTheRowsItsSamplesFallIn) {
  weft::LogHistogram h;
  EXPECT_EQ(h.rows_stored(), 0u);
  for (int64_t v = 2'200'000; v < 8'000'000; v += 997) h.add(v);  // 2.2-8 ms: 2^21 and 2^22
  EXPECT_EQ(h.rows_stored(), 2u);
  h.add(30'000);  // a fast one at 2^14
  EXPECT_EQ(h.rows_stored(), 3u);
  h.add(int64_t{1} << 50);  // the overflow bucket's row
  EXPECT_EQ(h.rows_stored(), 4u);
  for (int b = 0; b < weft::LogHistogram::kBuckets; ++b) h.add(weft::LogHistogram::bucket_low(b));
  EXPECT_EQ(h.rows_stored(), static_cast<size_t>(weft::LogHistogram::kRows));  // never more
  EXPECT_LE(sizeof(weft::LogHistogram), 128u);                                 // the part outside the rows
}

}  // namespace
