// Replies that carry follow-ups (issue 17): to a prober whose session asks for them, the responder
// hands a reply's kernel send time to the next reply on the same pair instead of a follow-up
// datagram of its own, sends on their own what no reply took within the hold, and never sends a
// carrying reply to a session that did not ask. Every reply's send time reaches the prober
// exactly once either way.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <map>
#include <thread>
#include <vector>

#include "base/clock.hpp"
#include "net/address.hpp"
#include "net/socket.hpp"
#include "probe/responder.hpp"
#include "probe/wire.hpp"
#include "prober_harness.hpp"

using namespace weft;
using namespace weft::probe;
using namespace std::chrono_literals;

namespace {

// UDP only, on 127.0.0.1.
ResponderConfig udp_only() {
  ResponderConfig c;
  c.listen_address = "127.0.0.1";
  c.serve_tcp = false;
  return c;
}

struct Seen {
  std::map<uint64_t, int> replies;          // seq -> replies
  std::map<uint64_t, int> entries;          // seq -> follow-up entries (carried or not)
  std::map<uint64_t, uint64_t> carried_by;  // seq -> the reply that carried its entry
  std::map<uint64_t, int64_t> entry_at;     // seq -> when its entry came (mono)
  int carrying_replies = 0, followups_messages = 0, other = 0;
  int64_t last_sent = 0;  // mono
};

// Sends `n` probes `gap` apart with `session` (with `last_pair` the last two back to back, so that
// a stalled machine cannot spread them wider than the hold), reading everything that comes back,
// then reads on until every reply's entry has come (or `tail` after the last probe).
Seen exchange(uint16_t port, uint64_t session, int n, std::chrono::milliseconds gap,
              std::chrono::milliseconds tail, bool last_pair = false) {
  auto fd = net::udp_socket(*net::SocketAddress::parse_ip("127.0.0.1", 0));
  const auto to = *net::SocketAddress::parse_ip("127.0.0.1", port);
  Seen s;
  auto read_all = [&] {
    uint8_t buf[2048];
    for (;;) {
      const ssize_t len = recv(fd->get(), buf, sizeof buf, MSG_DONTWAIT);
      if (len <= 0) return;
      const std::span<const uint8_t> in(buf, static_cast<size_t>(len));
      wire::Packet p;
      wire::Followups f;
      if (wire::decode(in, p) == wire::ParseError::ok && p.type == wire::Type::reply) {
        s.replies[p.seq]++;
      } else if (wire::decode_reply_followups(in, p, f) == wire::ParseError::ok) {
        s.replies[p.seq]++;
        s.carrying_replies++;
        for (size_t i = 0; i < f.count; ++i) {
          s.entries[f.entries[i].seq]++;
          s.carried_by[f.entries[i].seq] = p.seq;
          s.entry_at[f.entries[i].seq] = mono_ns();
        }
      } else if (wire::decode_followups(in, f) == wire::ParseError::ok) {
        s.followups_messages++;
        for (size_t i = 0; i < f.count; ++i) {
          s.entries[f.entries[i].seq]++;
          s.entry_at[f.entries[i].seq] = mono_ns();
        }
      } else {
        s.other++;
      }
    }
  };
  auto wait_read = [&](std::chrono::milliseconds d) {
    const int64_t end = mono_ns() + std::chrono::nanoseconds(d).count();
    while (mono_ns() < end) {
      pollfd q{fd->get(), POLLIN, 0};
      poll(&q, 1, 2);
      read_all();
    }
  };
  for (int k = 1; k <= n; ++k) {
    wire::Packet p;
    p.session = session;
    p.seq = static_cast<uint64_t>(k);
    p.prober_tx_ns = realtime_ns();
    uint8_t out[wire::kSize];
    wire::encode(p, out);
    s.last_sent = mono_ns();
    sendto(fd->get(), out, sizeof out, 0, to.sa(), to.length);
    if (!(last_pair && k == n - 1)) wait_read(gap);
  }
  const int64_t end = mono_ns() + std::chrono::nanoseconds(tail).count();
  while (mono_ns() < end && static_cast<int>(s.entries.size()) < n) wait_read(5ms);
  return s;
}

}  // namespace

TEST(ResponderCarry, RepliesOnABusyPairCarryTheEarlierSendTimes) {
  probe_test::RunningResponder resp(udp_only());
  const uint64_t session = wire::kSessionCarryTag | 0x2468;
  const int n = 20;
  Seen s = exchange(resp.r->udp_port(), session, n, 10ms, 2000ms, true);
  EXPECT_EQ(s.other, 0);
  for (int k = 1; k <= n; ++k) {
    EXPECT_EQ(s.replies[static_cast<uint64_t>(k)], 1) << k;
    EXPECT_EQ(s.entries[static_cast<uint64_t>(k)], 1) << k;  // every send time, exactly once
  }
  // Most rode on a later reply of the pair (the first has no earlier gap to judge the pair by; on
  // a stalled machine a few more may go on their own).
  EXPECT_GE(s.carried_by.size(), static_cast<size_t>(n / 2));
  for (const auto& [seq, by] : s.carried_by) EXPECT_GT(by, seq);
  // The last one (sent right after the one before: held) had no later reply: it came on its own,
  // after the hold (released up to one wake-up period early, to batch).
  EXPECT_EQ(s.carried_by.count(n), 0u);
  EXPECT_GE(s.followups_messages, 1);
  EXPECT_GE(s.entry_at[n] - s.last_sent, wire::kCarryHoldNs - 10'000'000);
  const auto c = resp.r->counters();
  EXPECT_EQ(c.answered, static_cast<uint64_t>(n));
  EXPECT_EQ(c.followups, static_cast<uint64_t>(n));
  EXPECT_EQ(c.carried, s.carried_by.size());
}

TEST(ResponderCarry, ASessionThatDidNotAskGetsFollowupDatagramsOnly) {
  probe_test::RunningResponder resp(udp_only());
  const int n = 20;
  Seen s = exchange(resp.r->udp_port(), 0x1112131415161718ULL & ~wire::kSessionCarryMask, n, 10ms, 2000ms);
  EXPECT_EQ(s.other, 0);
  EXPECT_EQ(s.carrying_replies, 0);
  for (int k = 1; k <= n; ++k) {
    EXPECT_EQ(s.replies[static_cast<uint64_t>(k)], 1) << k;
    EXPECT_EQ(s.entries[static_cast<uint64_t>(k)], 1) << k;
  }
  EXPECT_EQ(resp.r->counters().carried, 0u);
}

TEST(ResponderCarry, APairProbedLessOftenThanTheHoldIsNotHeld) {
  probe_test::RunningResponder resp(udp_only());
  // Probes 200 ms apart (longer than the 125 ms hold): each send time goes at once, as before.
  Seen s = exchange(resp.r->udp_port(), wire::kSessionCarryTag | 0x1357, 3, 200ms, 1000ms);
  EXPECT_EQ(s.carrying_replies, 0);
  for (int k = 1; k <= 3; ++k) EXPECT_EQ(s.entries[static_cast<uint64_t>(k)], 1) << k;
  EXPECT_EQ(resp.r->counters().carried, 0u);
}
