// The compact TIME-WAIT table (stack/tcp/time_wait.hpp): what each kind of segment gets during the
// wait, its end (by time, by an RST, by a new incarnation), the cap, and its memory per wait.
#include <gtest/gtest.h>
#include <malloc.h>

#include "stack/clock.hpp"
#include "stack/tcp/time_wait.hpp"

using namespace weft::stack;
using namespace weft::stack::tcp;

namespace {
constexpr int64_t kWait = 60 * kSec;
const FourTuple kT{wire::Ipv4Addr::of(10, 9, 0, 2), 80, wire::Ipv4Addr::of(10, 9, 0, 1), 50000};

TimeWaitEntry entry(int64_t now) {
  TimeWaitEntry e;
  e.snd_nxt = 1000;
  e.rcv_nxt = 5000;
  e.ts_recent = 700;
  e.ts_offset = 12345;
  e.ts_on = true;
  e.window = 502;
  e.until = now + kWait;
  return e;
}

wire::TcpSegment segment(uint8_t flags, uint32_t seq, uint32_t ts_val) {
  wire::TcpSegment s;
  s.h.src_port = kT.remote_port;
  s.h.dst_port = kT.local_port;
  s.h.seq = seq;
  s.h.ack = 1000;
  s.h.flags = flags;
  s.h.options.has_timestamps = true;
  s.h.options.ts_val = ts_val;
  return s;
}

using V = TimeWaitTable::Verdict;
namespace f = wire::tcpflag;

// A table with kT waiting since `t0`, and what its answers go to.
struct Waiting {
  explicit Waiting(int64_t t0 = 0) { EXPECT_TRUE(tw.add(kT, entry(t0), t0)); }
  V in(const wire::TcpSegment& s, int64_t now, bool may_reopen = true) {
    return tw.input(kT, s, now, may_reopen, ack, iss);
  }
  TimeWaitTable tw{16, kWait};
  wire::TcpHeader ack;
  uint32_t iss = 0;
};
}  // namespace

TEST(TimeWait, TheFinAgainIsAcknowledgedAndRestartsTheWait) {
  const int64_t t0 = 5 * kSec;
  Waiting w(t0);
  const wire::TcpHeader& ack = w.ack;
  TimeWaitTable& tw = w.tw;
  const int64_t t1 = t0 + 50 * kSec;
  ASSERT_EQ(w.in(segment(f::fin | f::ack, 4999, 701), t1), V::ack);
  EXPECT_EQ(ack.flags, f::ack);
  EXPECT_EQ(ack.seq, 1000u);
  EXPECT_EQ(ack.ack, 5000u);
  EXPECT_EQ(ack.window, 502);
  EXPECT_EQ(ack.src_port, 80);
  EXPECT_EQ(ack.dst_port, 50000);
  ASSERT_TRUE(ack.options.has_timestamps);
  EXPECT_EQ(ack.options.ts_val, static_cast<uint32_t>(t1 / kMs) + 12345u);
  EXPECT_EQ(ack.options.ts_ecr, 700u);
  tw.expire(t0 + kWait + kSec);  // the first wait's end: restarted, so still waiting
  EXPECT_TRUE(tw.contains(kT, t0 + kWait + kSec));
  tw.expire(t1 + kWait);
  EXPECT_EQ(tw.size(), 0u);
}

TEST(TimeWait, AnInWindowRstEndsTheWaitOthersAreDropped) {
  Waiting w;
  EXPECT_EQ(w.in(segment(f::rst, 4000, 0), kSec), V::dropped);
  EXPECT_EQ(w.tw.size(), 1u);
  EXPECT_EQ(w.in(segment(f::rst, 5000, 0), kSec), V::dropped);
  EXPECT_EQ(w.tw.size(), 0u);
  EXPECT_EQ(w.in(segment(f::ack, 5000, 701), kSec), V::absent);
}

TEST(TimeWait, ABareAckIsDroppedAnOldSegmentIsAnswered) {
  Waiting w;
  EXPECT_EQ(w.in(segment(f::ack, 5000, 701), kSec), V::dropped);
  EXPECT_EQ(w.in(segment(f::ack, 5000, 600), kSec), V::ack);  // PAWS
  wire::TcpSegment data = segment(f::ack, 4000, 701);
  const uint8_t byte = 1;
  data.payload = wire::Bytes(&byte, 1);
  EXPECT_EQ(w.in(data, kSec), V::ack);
}

TEST(TimeWait, ANewerSynReopensOnlyWhereAListenerTakesIt) {
  Waiting w;
  EXPECT_EQ(w.in(segment(f::syn, 100, 701), kSec, false), V::ack);  // no listener
  EXPECT_EQ(w.in(segment(f::syn, 9000, 699), kSec), V::ack);        // PAWS
  EXPECT_EQ(w.in(segment(f::syn | f::ack, 9000, 701), kSec), V::ack);
  EXPECT_EQ(w.tw.size(), 1u);
  EXPECT_EQ(w.in(segment(f::syn, 100, 701), kSec), V::reopen);
  EXPECT_EQ(w.iss, 1000u + 65537u);
  EXPECT_EQ(w.tw.size(), 0u);
}

TEST(TimeWait, AnOverWaitIsAbsentBeforeItIsExpired) {
  Waiting w;
  EXPECT_FALSE(w.tw.contains(kT, kWait));
  EXPECT_EQ(w.in(segment(f::fin | f::ack, 4999, 701), kWait), V::absent);
  EXPECT_EQ(w.tw.size(), 0u);
}

TEST(TimeWait, TheCapRefusesAndExpiredWaitsMakeRoom) {
  TimeWaitTable tw(4, kWait);
  FourTuple t = kT;
  for (uint16_t i = 0; i < 4; ++i) {
    t.remote_port = static_cast<uint16_t>(40000 + i);
    ASSERT_TRUE(tw.add(t, entry(i * kSec), i * kSec));
  }
  t.remote_port = 41000;
  EXPECT_FALSE(tw.add(t, entry(10 * kSec), 10 * kSec));
  EXPECT_EQ(tw.size(), 4u);
  EXPECT_TRUE(tw.add(t, entry(kWait + kSec / 2), kWait + kSec / 2));  // the first wait ended
  EXPECT_EQ(tw.size(), 4u);
}

// The memory bound the docs state for a server closing first at ~10,000 connections a second:
// a wait costs the heap at most kBytesPerWait bytes (a Connection in TIME-WAIT: sizeof(Connection)).
TEST(TimeWait, AWaitCostsAFewDozenBytes) {
  constexpr int kWaits = 100000;
  const size_t before = mallinfo2().uordblks;
  if (before == 0) GTEST_SKIP() << "this allocator keeps no mallinfo (a sanitizer's)";
  {
    TimeWaitTable tw(kWaits, kWait);
    FourTuple t = kT;
    for (int i = 0; i < kWaits; ++i) {
      t.remote_ip = wire::Ipv4Addr{0x0a000000u + static_cast<uint32_t>(i / 28000)};
      t.remote_port = static_cast<uint16_t>(32768 + i % 28000);
      ASSERT_TRUE(tw.add(t, entry(0), 0));
    }
    const size_t per_wait = (mallinfo2().uordblks - before) / kWaits;
    std::printf("TIME-WAIT: %zu bytes per wait (a Connection: %zu)\n", per_wait, sizeof(Connection));
    EXPECT_LE(per_wait, TimeWaitTable::kBytesPerWait);
    EXPECT_LT(per_wait * 10, sizeof(Connection));
  }
}
