// The responder's per-connection ring of echoes waiting for follow-ups: bounded, in reply order,
// held kHoldNs after the reply, dropped when no send stamp comes.
#include "probe/ip/stream_followups.hpp"

#include <gtest/gtest.h>

using weft::probe::StreamEcho;
using weft::probe::StreamEchoes;

namespace {
StreamEcho echo(uint64_t seq, uint32_t key, int64_t sent) {
  StreamEcho e;
  e.seq = seq;
  e.session = 2;
  e.key = key;
  e.sent_mono = sent;
  e.has_tx = true;  // push() must clear it
  return e;
}
weft::net::KernelTime at(int64_t ns) { return {ns, 0}; }
}  // namespace

TEST(StreamEchoes, FollowupsAreHeldThenGoInReplyOrder) {
  StreamEchoes r;
  EXPECT_EQ(r.due(1'000'000'000), nullptr);
  EXPECT_EQ(r.next_due(), INT64_MAX);
  r.push(echo(1, 47, 1000));
  r.push(echo(2, 95, 2000));
  EXPECT_TRUE(r.waiting_for_stamp());
  EXPECT_EQ(r.next_due(), 1000 + StreamEchoes::kStampWaitNs);  // no stamp yet
  EXPECT_FALSE(r.stamped(143, at(5)));                         // a follow-up's own: no echo
  EXPECT_TRUE(r.stamped(95, at(7)));                           // out of order is fine
  EXPECT_TRUE(r.waiting_for_stamp());                          // the oldest still waits
  EXPECT_TRUE(r.stamped(47, at(6)));
  EXPECT_FALSE(r.stamped(47, at(9)));  // a second stamp for the same key changes nothing
  EXPECT_EQ(r.next_due(), 1000 + StreamEchoes::kHoldNs);
  EXPECT_EQ(r.due(1000 + StreamEchoes::kHoldNs - 1), nullptr);  // held
  const StreamEcho* e = r.due(1000 + StreamEchoes::kHoldNs);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->seq, 1u);
  EXPECT_EQ(e->tx.software_ns, 6);
  r.pop();
  e = r.due(2000 + StreamEchoes::kHoldNs);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->seq, 2u);
  EXPECT_EQ(e->tx.software_ns, 7);
  r.pop();
  EXPECT_TRUE(r.empty());
}

TEST(StreamEchoes, AnEchoWithoutStampIsGivenUpAndTheRingIsBounded) {
  StreamEchoes r;
  for (uint64_t i = 0; i < StreamEchoes::kCap; ++i)
    r.push(echo(i + 1, static_cast<uint32_t>(48 * i + 47), 0));
  EXPECT_TRUE(r.full());
  EXPECT_EQ(r.size(), StreamEchoes::kCap);
  EXPECT_EQ(r.due(StreamEchoes::kStampWaitNs - 1), nullptr);
  const StreamEcho* e = r.due(StreamEchoes::kStampWaitNs);
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(e->has_tx);  // the caller sends nothing for it
  r.pop();
  EXPECT_FALSE(r.full());
  r.push(echo(100, 9999, 5));  // the freed place wraps around the ring
  EXPECT_TRUE(r.stamped(9999, at(1)));
  EXPECT_EQ(r.size(), StreamEchoes::kCap);
}
