// The TCP connection's building blocks: sequence arithmetic across the wrap, the byte ring, the
// out-of-order range set, RACK's send log and the RFC 6298 estimator.
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <vector>

#include "stack/tcp/ooo.hpp"
#include "stack/tcp/ring.hpp"
#include "stack/tcp/rto.hpp"
#include "stack/tcp/sent_log.hpp"
#include "stack/tcp/seq.hpp"

using namespace weft::stack::tcp;

TEST(TcpSeq, ComparesAcrossTheWrap) {
  EXPECT_TRUE(seq_lt(0xfffffff0u, 0x10u));
  EXPECT_TRUE(seq_gt(0x10u, 0xfffffff0u));
  EXPECT_TRUE(seq_le(5u, 5u));
  EXPECT_FALSE(seq_lt(5u, 5u));
  EXPECT_EQ(seq_max(0xfffffff0u, 0x10u), 0x10u);
  EXPECT_EQ(seq_diff(0x10u, 0xfffffff0u), 0x20u);
}

TEST(TcpRing, WrapsAndParksDataPastTheTail) {
  ByteRing r(10);
  std::vector<uint8_t> in(7);
  std::iota(in.begin(), in.end(), 1);
  EXPECT_EQ(r.push(in), 7u);
  std::vector<uint8_t> out(5);
  EXPECT_EQ(r.pop(out), 5u);
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 2, 3, 4, 5}));
  // 2 bytes stored, head at 5: an out-of-order piece 3 past the tail wraps around the end.
  const std::vector<uint8_t> late{30, 31, 32, 33};
  EXPECT_EQ(r.write_past_tail(3, late), 4u);
  EXPECT_EQ(r.size(), 2u);
  const std::vector<uint8_t> gap{20, 21, 22};
  EXPECT_EQ(r.write_past_tail(0, gap), 3u);
  r.commit(7);
  EXPECT_EQ(r.size(), 9u);
  const auto [a, b] = r.peek(0, 9);
  std::vector<uint8_t> all(a.begin(), a.end());
  all.insert(all.end(), b.begin(), b.end());
  EXPECT_EQ(all, (std::vector<uint8_t>{6, 7, 20, 21, 22, 30, 31, 32, 33}));
  EXPECT_FALSE(b.empty());                    // it did wrap
  EXPECT_EQ(r.write_past_tail(1, late), 0u);  // only 1 byte free: offset 1 is past it
  EXPECT_EQ(r.push(late), 1u);
}

TEST(TcpRing, ReusesTheMemoryOfARingThatWentAway) {
  constexpr size_t kCap = 12345;  // a capacity no other test uses
  const uint8_t* first = nullptr;
  const size_t cached = ring_memory_cached();
  {
    ByteRing r(kCap);
    EXPECT_EQ(r.allocated(), 0u);  // nothing before the first write
    const std::vector<uint8_t> in{1, 2, 3};
    r.push(in);
    first = r.reserve().first.data() - 3;
    EXPECT_EQ(r.allocated(), kCap);
    r.release_if_empty();  // holds data: kept
    EXPECT_EQ(r.allocated(), kCap);
  }
  EXPECT_EQ(ring_memory_cached(), cached + kCap);
  ByteRing again(kCap);
  again.push(std::vector<uint8_t>{9});
  EXPECT_EQ(again.reserve().first.data() - 1, first);  // the same buffer, its pages mapped
  EXPECT_EQ(ring_memory_cached(), cached);
  std::vector<uint8_t> out(1);
  again.pop(out);
  again.release_if_empty();
  EXPECT_EQ(again.allocated(), 0u);
  EXPECT_EQ(ring_memory_cached(), cached + kCap);
  again.push(std::vector<uint8_t>{7});  // a later write takes memory again
  EXPECT_EQ(again.allocated(), kCap);
}

TEST(TcpOoo, MergesAndHandsBackContiguousData) {
  OooRanges o;
  EXPECT_TRUE(o.add(100, 200));
  EXPECT_TRUE(o.add(300, 400));
  EXPECT_TRUE(o.add(200, 300));  // bridges both
  ASSERT_EQ(o.count(), 1u);
  EXPECT_EQ(o[0].left, 100u);
  EXPECT_EQ(o[0].right, 400u);
  EXPECT_EQ(o.take_contiguous(50), 50u);  // a gap before 100
  EXPECT_EQ(o.take_contiguous(150), 400u);
  EXPECT_TRUE(o.empty());
  for (uint32_t i = 0; i < OooRanges::kMax; ++i) EXPECT_TRUE(o.add(i * 10, i * 10 + 5));
  EXPECT_FALSE(o.add(1000, 1001));  // full: a new range is refused
  EXPECT_TRUE(o.add(5, 10));        // merging still works
  EXPECT_EQ(o.count(), OooRanges::kMax - 1);
  // Wrap: ranges either side of 2^32 stay ordered.
  OooRanges w;
  EXPECT_TRUE(w.add(0x10, 0x20));
  EXPECT_TRUE(w.add(0xfffffff0u, 0xfffffff8u));
  EXPECT_EQ(w[0].left, 0xfffffff0u);
}

TEST(TcpOoo, RandomInsertsMatchABitmapModel) {
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    OooRanges o;
    std::vector<bool> model(400, false);
    const uint32_t base = static_cast<uint32_t>(rng());  // anywhere, including across the wrap
    for (int k = 0; k < 12; ++k) {
      const uint32_t l = rng() % 380, n = 1 + rng() % 20;
      if (!o.add(base + l, base + l + n)) continue;
      for (uint32_t i = l; i < l + n; ++i) model[i] = true;
    }
    std::vector<bool> got(400, false);
    for (size_t i = 0; i < o.count(); ++i) {
      if (i > 0) {
        ASSERT_TRUE(seq_lt(o[i - 1].right, o[i].left));  // sorted, disjoint, not touching
      }
      for (uint32_t s = o[i].left; s != o[i].right; ++s) got[s - base] = true;
    }
    ASSERT_EQ(got, model);
  }
}

TEST(TcpRto, FollowsRfc6298) {
  RtoEstimator r({.initial_ns = 1'000'000'000,
                  .min_ns = 200'000'000,
                  .max_ns = 60'000'000'000,
                  .granularity_ns = 1'000'000});
  EXPECT_EQ(r.rto_ns(), 1'000'000'000);  // 2.1: 1 s before any sample
  r.sample(100'000'000);                 // 2.2: SRTT = R, RTTVAR = R/2, RTO = R + 4 R/2
  EXPECT_EQ(r.srtt_ns(), 100'000'000);
  EXPECT_EQ(r.rttvar_ns(), 50'000'000);
  EXPECT_EQ(r.rto_ns(), 300'000'000);
  r.sample(200'000'000);  // 2.3: RTTVAR = 3/4 * 50 + 1/4 * 100 = 62.5; SRTT = 7/8 * 100 + 1/8 * 200 = 112.5
  EXPECT_EQ(r.rttvar_ns(), 62'500'000);
  EXPECT_EQ(r.srtt_ns(), 112'500'000);
  EXPECT_EQ(r.rto_ns(), 362'500'000);
  r.back_off();  // 5.5: doubles
  r.back_off();
  EXPECT_EQ(r.rto_ns(), 1'450'000'000);
  for (int i = 0; i < 40; ++i) r.back_off();
  EXPECT_EQ(r.rto_ns(), 60'000'000'000);  // 2.5: capped
  r.sample(1'000'000);                    // a new sample ends the backoff; the minimum holds
  EXPECT_GE(r.rto_ns(), 200'000'000);
  EXPECT_LT(r.rto_ns(), 1'450'000'000);
}

TEST(TcpSentLog, SplitsFindsAndTrimsAcrossTheWrap) {
  SentLog log(8);
  const uint32_t base = 0xfffff000u;  // the records cross the 32-bit wrap
  for (uint32_t i = 0; i < 4; ++i) log.append(base + i * 1000, base + (i + 1) * 1000, i);
  ASSERT_EQ(log.size(), 4u);
  EXPECT_EQ(log.find(base), 0u);
  EXPECT_EQ(log.find(base + 999), 0u);
  EXPECT_EQ(log.find(base + 1000), 1u);
  EXPECT_EQ(log.find(base + 4000), 4u);
  ASSERT_TRUE(log.split_at(base + 2500));  // inside the third record, past the wrap
  ASSERT_EQ(log.size(), 5u);
  EXPECT_EQ(log[2].end, base + 2500);
  EXPECT_EQ(log[3].start, base + 2500);
  EXPECT_EQ(log[3].xmit_ns, 2);            // both halves keep the send time
  EXPECT_TRUE(log.split_at(base + 3000));  // already a boundary: nothing to do
  EXPECT_EQ(log.size(), 5u);
  log.trim_below(base + 1500);  // drops the first, cuts the second
  ASSERT_EQ(log.size(), 4u);
  EXPECT_EQ(log[0].start, base + 1500);
  EXPECT_EQ(log[0].end, base + 2000);
}

TEST(TcpSentLog, FullRingMergesNewDataAndRefusesSplits) {
  SentLog log(4);
  for (uint32_t i = 0; i < 4; ++i) log.append(i * 100, (i + 1) * 100, i);
  log.append(400, 500, 9);  // no room: the last record grows and keeps its older time
  ASSERT_EQ(log.size(), 4u);
  EXPECT_EQ(log[3].end, 500u);
  EXPECT_EQ(log[3].xmit_ns, 3);
  EXPECT_FALSE(log.split_at(450));
  log.trim_below(100);  // room again after the ring wrapped its head
  EXPECT_TRUE(log.split_at(450));
  ASSERT_EQ(log.size(), 4u);
  EXPECT_EQ(log[2].end, 450u);
  EXPECT_EQ(log[3].start, 450u);
}

// The ring starts with kFirst records and doubles when full (keeping the order across a wrapped
// head) up to its capacity, where new data merges into the last record again.
TEST(TcpSentLog, GrowsFromASmallRingToItsCapacityInOrder) {
  SentLog log(40);
  EXPECT_EQ(log.allocated(), 0u);
  log.append(0, 100, 0);
  EXPECT_EQ(log.allocated(), SentLog::kFirst * sizeof(SentSeg));
  for (uint32_t i = 1; i < SentLog::kFirst; ++i) log.append(i * 100, (i + 1) * 100, i);
  log.trim_below(500);  // the head moves: the next appends wrap around the small ring
  for (uint32_t i = SentLog::kFirst; i < SentLog::kFirst + 5; ++i) log.append(i * 100, (i + 1) * 100, i);
  ASSERT_EQ(log.size(), SentLog::kFirst);
  EXPECT_EQ(log.allocated(), SentLog::kFirst * sizeof(SentSeg));
  log.append(2100, 2200, 21);  // full: grows to 32, in order
  EXPECT_EQ(log.allocated(), 32 * sizeof(SentSeg));
  ASSERT_EQ(log.size(), SentLog::kFirst + 1);
  for (size_t i = 0; i < log.size(); ++i) {
    EXPECT_EQ(log[i].start, 500 + i * 100);
    EXPECT_EQ(log[i].xmit_ns, static_cast<int64_t>(5 + i));
  }
  for (uint32_t i = 22; i < 60; ++i) log.append(i * 100, (i + 1) * 100, i);
  EXPECT_EQ(log.allocated(), 40 * sizeof(SentSeg));  // capped at the capacity, not 64
  ASSERT_EQ(log.size(), 40u);
  EXPECT_EQ(log[39].end, 6000u);  // the last record took what did not fit
  EXPECT_EQ(log[39].xmit_ns, 44);
  log.trim_below(6000);
  log.release_if_empty();
  EXPECT_EQ(log.allocated(), 0u);
}

// Random appends, splits and trims against a byte-by-byte model: the records always tile
// [una, end) in order, and every byte keeps the send time of the append that logged it.
TEST(TcpSentLog, RandomOperationsMatchAByteModel) {
  std::mt19937 rng(7);
  SentLog log(64);
  const uint32_t start = 0xffff0000u;
  uint32_t una = start, end = start;
  std::vector<int64_t> when;  // send time of byte una + i
  for (int step = 0; step < 20000; ++step) {
    const int op = static_cast<int>(rng() % 4);
    if (op == 0 && log.size() < log.capacity()) {
      const uint32_t len = 1 + rng() % 1500;
      log.append(end, end + len, step);
      when.insert(when.end(), len, step);
      end += len;
    } else if (op == 1 && end != una) {
      log.split_at(una + static_cast<uint32_t>(rng() % (end - una)));
    } else if (op == 2 && end != una) {
      const uint32_t n = static_cast<uint32_t>(rng() % (end - una + 1));
      log.trim_below(una + n);
      when.erase(when.begin(), when.begin() + n);
      una += n;
    }
    uint32_t at = una;
    for (size_t i = 0; i < log.size(); ++i) {
      ASSERT_EQ(log[i].start, at) << "step " << step;
      ASSERT_TRUE(seq_lt(log[i].start, log[i].end));
      for (uint32_t b = log[i].start; seq_lt(b, log[i].end); b += 97)
        ASSERT_EQ(log[i].xmit_ns, when[b - una]) << "step " << step;
      at = log[i].end;
    }
    ASSERT_EQ(at, end);
  }
}
