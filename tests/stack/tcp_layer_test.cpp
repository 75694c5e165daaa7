// The TCP layer: demultiplexing, listen/accept/connect, RSTs for segments that reach nothing,
// the backlog cap under a SYN flood (and that the flood leaves an open connection alone), release
// and reaping, one ACK per receive batch (and the ACKs that do not wait), and RFC 6528 ISNs
// (SipHash-2-4 against its reference vector).
#include "stack/tcp/tcp_layer.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <deque>
#include <utility>
#include <vector>

#include "base/big_endian.hpp"
#include "stack/clock.hpp"
#include "stack/wire/checksum.hpp"
#include "stack/wire/frame.hpp"

using namespace weft::stack;
using namespace weft::stack::tcp;

namespace {
const wire::Ipv4Addr kA = wire::Ipv4Addr::of(10, 9, 0, 1);
const wire::Ipv4Addr kB = wire::Ipv4Addr::of(10, 9, 0, 2);

// Frames from one layer, kept until the test delivers them.
struct Outbox : SegmentSink {
  void send_segment(const FourTuple& t, const wire::TcpHeader& h, wire::Bytes p1, wire::Bytes p2) override {
    std::vector<uint8_t> payload(p1.begin(), p1.end());
    payload.insert(payload.end(), p2.begin(), p2.end());
    wire::L2L3 l;
    l.ip.src = t.local_ip;
    l.ip.dst = t.remote_ip;
    std::vector<uint8_t> f(100 + payload.size());
    f.resize(wire::build_tcp_frame(f, l, h, payload));
    frames.push_back(std::move(f));
  }
  std::deque<std::vector<uint8_t>> frames;
};

void deliver(Outbox& from, TcpLayer& to) {
  while (!from.frames.empty()) {
    const std::vector<uint8_t> frame = std::move(from.frames.front());
    from.frames.pop_front();
    wire::ParsedFrame f;
    ASSERT_EQ(wire::parse_frame(frame, f), wire::ParseError::ok);
    to.input(f.ip.src, f.ip.dst, f.tcp);
  }
}

struct Pair {
  VirtualClock clock{5 * kSec};
  Outbox out_a, out_b;
  TcpLayer a{Config{}, clock, out_a, 1, 2};
  TcpLayer b{Config{}, clock, out_b, 3, 4};
  void pump() {
    for (int i = 0; i < 20 && !(out_a.frames.empty() && out_b.frames.empty()); ++i) {
      deliver(out_a, b);
      deliver(out_b, a);
    }
  }
};
}  // namespace

TEST(TcpLayer, ConnectAcceptExchangeCloseAndReap) {
  Pair p;
  ASSERT_TRUE(p.b.listen(80));
  EXPECT_FALSE(p.b.listen(80));
  auto c = p.a.connect(kA, kB, 80);
  ASSERT_TRUE(c);
  EXPECT_GE((*c)->tuple().local_port, 49152);
  EXPECT_EQ(p.b.accept(80), nullptr);  // not established yet
  p.pump();
  Connection* s = p.b.accept(80);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->state(), State::established);
  const std::vector<uint8_t> msg{'h', 'i'};
  EXPECT_EQ((*c)->send(msg), 2u);
  p.pump();
  std::vector<uint8_t> buf(10);
  EXPECT_EQ(s->recv(buf), 2u);
  EXPECT_GT((*c)->memory(), sizeof(Connection));  // the send ring and log, once it sent
  (*c)->close();
  p.pump();
  s->close();
  p.pump();
  EXPECT_EQ(s->state(), State::closed);
  EXPECT_EQ((*c)->state(), State::time_wait);
  EXPECT_EQ((*c)->memory(), sizeof(Connection));  // TIME-WAIT holds no ring and no send log
  p.b.release(s);
  EXPECT_EQ(p.b.connection_count(), 0u);
  p.a.release(*c);
  EXPECT_EQ(p.a.connection_count(), 0u);  // TIME-WAIT runs on after release, in the compact table
  EXPECT_EQ(p.a.time_wait_count(), 1u);
  p.clock.advance(61 * kSec);
  p.a.poll();
  EXPECT_EQ(p.a.time_wait_count(), 0u);
}

TEST(TcpLayer, SegmentsForNothingGetRst) {
  Pair p;
  auto c = p.a.connect(kA, kB, 81);  // nobody listens on 81
  ASSERT_TRUE(c);
  deliver(p.out_a, p.b);
  ASSERT_EQ(p.out_b.frames.size(), 1u);
  EXPECT_EQ(p.b.stats().resets_sent, 1u);
  wire::ParsedFrame f;
  ASSERT_EQ(wire::parse_frame(p.out_b.frames.front(), f), wire::ParseError::ok);
  EXPECT_EQ(f.tcp.h.flags, wire::tcpflag::rst | wire::tcpflag::ack);
  EXPECT_EQ(f.tcp.h.seq, 0u);
  deliver(p.out_b, p.a);
  EXPECT_EQ((*c)->state(), State::closed);
  EXPECT_EQ((*c)->close_reason(), CloseReason::refused);
  // An RST to nothing is not answered.
  wire::TcpSegment rst;
  rst.h.flags = wire::tcpflag::rst;
  p.b.input(kA, kB, rst);
  EXPECT_TRUE(p.out_b.frames.empty());
}

TEST(TcpLayer, SynFloodIsCappedByTheBacklogAndSparesOpenConnections) {
  Pair p;
  ASSERT_TRUE(p.b.listen(80, 4));
  auto c = p.a.connect(kA, kB, 80);
  ASSERT_TRUE(c);
  p.pump();
  Connection* s = p.b.accept(80);
  ASSERT_NE(s, nullptr);
  // 1000 SYNs from spoofed ports that never complete: 4 half-open, the rest answered with cookies.
  for (uint16_t port = 1000; port < 2000; ++port) {
    wire::TcpSegment syn;
    syn.h.src_port = port;
    syn.h.dst_port = 80;
    syn.h.seq = port * 7919u;
    syn.h.flags = wire::tcpflag::syn;
    syn.h.window = 1000;
    p.b.input(wire::Ipv4Addr::of(203, 0, 113, 9), kB, syn);
  }
  EXPECT_EQ(p.b.connection_count(), 1u + 4u);
  EXPECT_EQ(p.b.stats().cookies_sent, 996u);
  EXPECT_EQ(p.b.stats().syns_dropped, 0u);
  p.out_b.frames.clear();  // the SYN-ACKs to the spoofed addresses go nowhere
  const std::vector<uint8_t> msg(1000, 7);
  EXPECT_EQ((*c)->send(msg), 1000u);
  p.pump();
  std::vector<uint8_t> buf(2000);
  EXPECT_EQ(s->recv(buf), 1000u);
  // The half-open ones give up after their 5 SYN-ACK retries (1+2+4+8+16+32 s), freeing the backlog.
  for (int i = 0; i < 62; ++i) {
    p.clock.advance(1 * kSec);
    p.b.poll();
    p.out_b.frames.clear();
  }
  EXPECT_EQ(p.b.connection_count(), 5u);
  p.clock.advance(1 * kSec);
  p.b.poll();
  EXPECT_EQ(p.b.connection_count(), 1u);
}

namespace {
// Moves the frames addressed to `dst` from `from` to `to`; drops the rest (they go to spoofed
// addresses nobody answers from).
size_t deliver_to(Outbox& from, wire::Ipv4Addr dst, TcpLayer& to) {
  size_t n = 0;
  while (!from.frames.empty()) {
    const std::vector<uint8_t> frame = std::move(from.frames.front());
    from.frames.pop_front();
    wire::ParsedFrame f;
    EXPECT_EQ(wire::parse_frame(frame, f), wire::ParseError::ok);
    if (f.ip.dst != dst) continue;
    to.input(f.ip.src, f.ip.dst, f.tcp);
    ++n;
  }
  return n;
}

// A SYN as Linux sends it (MSS, SACK-permitted, timestamps, window scale 7) from a spoofed source.
wire::TcpSegment spoofed_syn(uint32_t k) {
  wire::TcpSegment syn;
  syn.h.src_port = static_cast<uint16_t>(1024 + k % 60000);
  syn.h.dst_port = 80;
  syn.h.seq = k * 2654435761u;
  syn.h.flags = wire::tcpflag::syn;
  syn.h.window = 64240;
  syn.h.options.has_mss = true;
  syn.h.options.mss = 1460;
  syn.h.options.sack_permitted = true;
  syn.h.options.has_timestamps = true;
  syn.h.options.ts_val = k;
  syn.h.options.has_wscale = true;
  syn.h.options.wscale = 7;
  return syn;
}
}  // namespace

// Issue 26: 1,100 spoofed SYNs kept a listener from accepting a real client for 123 s, and after
// 100,000 none of 3,000 later handshakes got a SYN-ACK. With SYN cookies (RFC 4987) the listener
// keeps `backlog` half-open connections and answers the rest statelessly: a real client in the
// middle of 100,000 spoofed SYNs is accepted on its first round trip (no time passes), with its
// MSS, SACK, timestamps and window scale as negotiated, and carries data both ways.
TEST(TcpLayer, SynCookiesLetARealClientInDuringAFloodOf100000SpoofedSyns) {
  Pair p;
  ASSERT_TRUE(p.b.listen(80, 128));
  auto flood = [&](uint32_t from, uint32_t n) {
    for (uint32_t k = from; k < from + n; ++k) {
      p.b.input(wire::Ipv4Addr{0xc6120000u + k}, kB, spoofed_syn(k));  // 198.18.0.0/15
      if (p.out_b.frames.size() > 1000) p.out_b.frames.clear();
    }
  };
  flood(0, 50000);
  p.out_b.frames.clear();
  auto c = p.a.connect(kA, kB, 80);
  ASSERT_TRUE(c);
  deliver(p.out_a, p.b);                        // the client's SYN, amid the flood
  ASSERT_EQ(deliver_to(p.out_b, kA, p.a), 1u);  // its SYN-ACK (a cookie)
  flood(50000, 50000);
  p.out_b.frames.clear();
  deliver(p.out_a, p.b);  // the ACK with the cookie
  Connection* s = p.b.accept(80);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->state(), State::established);
  EXPECT_EQ((*c)->state(), State::established);
  EXPECT_EQ(p.b.stats().cookies_sent, 100000u - 128u + 1u);
  EXPECT_EQ(p.b.stats().cookies_accepted, 1u);
  EXPECT_EQ(p.b.connection_count(), 128u + 1u);  // the memory bound: backlog half-open entries
  EXPECT_TRUE(s->timestamps_on());
  EXPECT_TRUE(s->sack_on());
  EXPECT_EQ(s->snd_wscale(), (*c)->rcv_wscale());
  EXPECT_EQ((*c)->snd_wscale(), s->rcv_wscale());
  EXPECT_EQ(s->send_mss(), (*c)->send_mss());  // 1460 is in the cookie's table: nothing lost
  // Half-open entries hold no rings: the flood costs the listener backlog x this, whatever its size.
  std::printf("SYN flood: %zu half-open connections of %zu bytes each (%zu KiB), %llu cookies sent\n",
              p.b.connection_count() - 1, sizeof(Connection),
              (p.b.connection_count() - 1) * sizeof(Connection) / 1024,
              static_cast<unsigned long long>(p.b.stats().cookies_sent));
  // Data both ways, byte-exact, across many windows.
  std::vector<uint8_t> up(300000), down(200000), got;
  for (size_t i = 0; i < up.size(); ++i) up[i] = static_cast<uint8_t>(i * 7 + 1);
  for (size_t i = 0; i < down.size(); ++i) down[i] = static_cast<uint8_t>(i * 11 + 3);
  size_t up_sent = 0, down_sent = 0;
  std::vector<uint8_t> got_up, got_down, buf(65536);
  for (int round = 0; round < 2000 && (got_up.size() < up.size() || got_down.size() < down.size()); ++round) {
    up_sent += (*c)->send(wire::Bytes(up).subspan(up_sent));
    down_sent += s->send(wire::Bytes(down).subspan(down_sent));
    p.pump();
    for (size_t n; (n = s->recv(buf)) > 0;)
      got_up.insert(got_up.end(), buf.begin(), buf.begin() + static_cast<long>(n));
    for (size_t n; (n = (*c)->recv(buf)) > 0;)
      got_down.insert(got_down.end(), buf.begin(), buf.begin() + static_cast<long>(n));
    p.pump();
  }
  EXPECT_EQ(got_up, up);
  EXPECT_EQ(got_down, down);
}

// Only an ACK that carries a cookie this listener made, for its 4-tuple and SYN, within two
// periods, makes a connection; the others are answered with an RST as before. A listener that
// has not overflowed checks no cookies at all.
TEST(TcpLayer, OnlyValidRecentCookiesMakeConnections) {
  Pair p;
  ASSERT_TRUE(p.b.listen(80, 1));
  wire::TcpSegment ack;
  ack.h.src_port = 5555;
  ack.h.dst_port = 80;
  ack.h.seq = 1001;
  ack.h.ack = 77;
  ack.h.flags = wire::tcpflag::ack;
  p.b.input(kA, kB, ack);  // no overflow yet: not even checked
  EXPECT_EQ(p.b.stats().cookies_rejected, 0u);
  EXPECT_EQ(p.b.stats().resets_sent, 1u);
  p.b.input(kA, kB, spoofed_syn(1));  // half-open
  p.out_b.frames.clear();
  wire::TcpSegment syn = spoofed_syn(2);
  syn.h.src_port = 5555;
  syn.h.seq = 1000;
  p.b.input(kA, kB, syn);  // a cookie
  ASSERT_EQ(p.out_b.frames.size(), 1u);
  wire::ParsedFrame f;
  ASSERT_EQ(wire::parse_frame(p.out_b.frames.front(), f), wire::ParseError::ok);
  p.out_b.frames.clear();
  const uint32_t cookie = f.tcp.h.seq;
  EXPECT_TRUE(f.tcp.h.options.has_timestamps);
  EXPECT_EQ(f.tcp.h.options.ts_val & 0x1f, 0x17u);  // SACK (bit 4) and the peer's scale 7
  ack.h.options.has_timestamps = true;
  ack.h.options.ts_ecr = f.tcp.h.options.ts_val;
  for (const uint32_t wrong : {cookie + 1, cookie ^ 0x01000000u, cookie + 0x00800000u}) {
    ack.h.ack = wrong + 1;
    p.b.input(kA, kB, ack);
  }
  ack.h.ack = cookie + 1;
  ack.h.src_port = 5556;  // another 4-tuple
  p.b.input(kA, kB, ack);
  ack.h.src_port = 5555;
  ack.h.seq = 2001;  // another SYN sequence number (one off would only move the MSS index, as in Linux)
  p.b.input(kA, kB, ack);
  EXPECT_EQ(p.b.stats().cookies_rejected, 5u);
  EXPECT_EQ(p.b.connection_count(), 1u);
  // Two periods (about 128 s) later the right one is too old.
  p.clock.advance(2 * SynCookies::kPeriodNs);
  ack.h.seq = 1001;
  p.b.input(kA, kB, ack);
  EXPECT_EQ(p.b.stats().cookies_accepted, 0u);
  EXPECT_EQ(p.b.acceptable(80), 0u);
  // Within its time it makes an established connection with what the cookie kept.
  Pair q;
  ASSERT_TRUE(q.b.listen(80, 1));
  q.b.input(kA, kB, spoofed_syn(1));
  q.out_b.frames.clear();
  q.b.input(kA, kB, syn);
  ASSERT_EQ(wire::parse_frame(q.out_b.frames.front(), f), wire::ParseError::ok);
  q.clock.advance(SynCookies::kPeriodNs);  // one period later: still valid
  ack.h.ack = f.tcp.h.seq + 1;
  ack.h.options.ts_ecr = f.tcp.h.options.ts_val;
  ack.h.options.ts_val = 5;
  q.b.input(kA, kB, ack);
  Connection* s = q.b.accept(80);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->sack_on());
  EXPECT_EQ(s->snd_wscale(), 7u);
  EXPECT_EQ(s->send_mss(), 1460u - 12u);
}

// Issue 26: a SYN whose option list is damaged (a window scale option of the wrong length, then a
// kind with length 0) was dropped silently; Linux answers it, ignoring what it could not read.
TEST(TcpLayer, SynWithMalformedOptionsIsAnsweredWithoutThem) {
  Pair p;
  ASSERT_TRUE(p.b.listen(80));
  wire::TcpHeader h;
  h.src_port = 4000;
  h.dst_port = 80;
  h.seq = 12345;
  h.flags = wire::tcpflag::syn;
  h.window = 64240;
  h.options.has_mss = true;  // 20 bytes of options in all, overwritten below
  h.options.mss = 1460;
  h.options.has_timestamps = true;
  h.options.has_wscale = true;
  wire::L2L3 l;
  l.ip.src = kA;
  l.ip.dst = kB;
  std::vector<uint8_t> f(200);
  f.resize(wire::build_tcp_frame(f, l, h, {}));
  const size_t tcp = wire::kEthernetHeader + wire::kIpv4Header;
  ASSERT_EQ(f.size(), tcp + 40);
  const uint8_t opts[20] = {2,  4,  0x05, 0xb4,                    // MSS 1460
                            3,  4,  7,    0,                       // window scale with length 4: skipped
                            8,  10, 0,    0,    0, 9, 0, 0, 0, 0,  // timestamps, TSval 9
                            30, 0};                                // length 0: the list ends here
  std::copy(std::begin(opts), std::end(opts), f.begin() + static_cast<long>(tcp + 20));
  weft::be::store<uint16_t>(f.data() + tcp + 16, 0);
  const uint64_t pseudo = wire::csum_pseudo(kA, kB, wire::ipproto::tcp, 40);
  weft::be::store<uint16_t>(f.data() + tcp + 16,
                            wire::csum_finish(wire::csum_add(pseudo, wire::Bytes(f).subspan(tcp))));
  wire::ParsedFrame pf;
  ASSERT_EQ(wire::parse_frame(f, pf), wire::ParseError::ok);
  p.b.input(pf.ip.src, pf.ip.dst, pf.tcp);
  ASSERT_EQ(p.out_b.frames.size(), 1u);
  ASSERT_EQ(wire::parse_frame(p.out_b.frames.front(), pf), wire::ParseError::ok);
  EXPECT_EQ(pf.tcp.h.flags, wire::tcpflag::syn | wire::tcpflag::ack);
  EXPECT_EQ(pf.tcp.h.ack, 12346u);
  EXPECT_TRUE(pf.tcp.h.options.has_timestamps);
  EXPECT_EQ(pf.tcp.h.options.ts_ecr, 9u);
  EXPECT_FALSE(pf.tcp.h.options.has_wscale);  // the peer's could not be read: none offered back
}

TEST(TcpSynCookie, MssTableAndTimestampOptions) {
  EXPECT_EQ(SynCookies::mss_index(100), 0u);  // below the table: its smallest, 536 (as Linux)
  EXPECT_EQ(SynCookies::mss_index(536), 0u);
  EXPECT_EQ(SynCookies::mss_index(1299), 0u);
  EXPECT_EQ(SynCookies::mss_index(1300), 1u);
  EXPECT_EQ(SynCookies::mss_index(1459), 2u);
  EXPECT_EQ(SynCookies::mss_index(9000), 3u);
  for (const uint32_t now : {0u, 63u, 64u, 1000u, 0xffffffc5u}) {
    for (const bool sack : {false, true}) {
      for (const int ws : {-1, 0, 7, 14}) {
        CookieOptions o;
        o.timestamps = true;
        o.sack = sack;
        o.wscale_ok = ws >= 0;
        o.wscale = static_cast<uint8_t>(ws < 0 ? 0 : ws);
        const uint32_t ts = SynCookies::ts_encode(now, o);
        EXPECT_LE(now - ts, 63u);  // never ahead of the clock, at most 63 ms behind
        CookieOptions back;
        back.timestamps = true;
        SynCookies::ts_decode(ts, back);
        EXPECT_EQ(back.sack, o.sack);
        EXPECT_EQ(back.wscale_ok, o.wscale_ok);
        EXPECT_EQ(back.wscale, o.wscale);
      }
    }
  }
  CookieOptions none;  // the ACK carried no timestamps: only the MSS survives
  none.sack = true;
  SynCookies::ts_decode(0x17, none);
  EXPECT_FALSE(none.sack);
  EXPECT_FALSE(none.wscale_ok);
  SynCookies c(1, 2);
  const FourTuple t{kB, 80, kA, 4000};
  for (uint32_t idx = 0; idx < 4; ++idx)
    EXPECT_EQ(c.check(t, 99, c.make(t, 99, idx, 5 * kSec), 70 * kSec), int(idx));
}

namespace {
// An established pair with `segs` full segments from a to b waiting in a's outbox.
Connection* established_with_data(Pair& p, size_t segs) {
  EXPECT_TRUE(p.b.listen(80));
  auto c = p.a.connect(kA, kB, 80);
  EXPECT_TRUE(c);
  p.pump();
  Connection* s = p.b.accept(80);
  EXPECT_NE(s, nullptr);
  const std::vector<uint8_t> data(segs * (*c)->send_mss(), 7);
  EXPECT_EQ((*c)->send(data), data.size());
  EXPECT_EQ(p.out_a.frames.size(), segs);
  return s;
}
// The sequence number a data frame starts at, and the one past its end.
std::pair<uint32_t, uint32_t> seq_of(const std::vector<uint8_t>& frame) {
  wire::ParsedFrame f;
  EXPECT_EQ(wire::parse_frame(frame, f), wire::ParseError::ok);
  return {f.tcp.h.seq, f.tcp.h.seq + static_cast<uint32_t>(f.tcp.payload.size())};
}
uint32_t ack_of(const std::vector<uint8_t>& frame) {
  wire::ParsedFrame f;
  EXPECT_EQ(wire::parse_frame(frame, f), wire::ParseError::ok);
  EXPECT_TRUE(f.tcp.payload.empty());
  return f.tcp.h.ack;
}
}  // namespace

TEST(TcpLayer, InOrderDataInOneReceiveBatchIsAcknowledgedOnceAtItsEnd) {
  Pair unbatched;
  Connection* s0 = established_with_data(unbatched, 6);
  ASSERT_NE(s0, nullptr);
  deliver(unbatched.out_a, unbatched.b);
  // One per two full-sized segments (RFC 5681 4.2), a full segment being 12 bytes short of the MSS
  // with timestamps (counted against the MSS itself, it was one per three).
  EXPECT_EQ(unbatched.out_b.frames.size(), 3u);

  Pair p;
  ASSERT_NE(established_with_data(p, 6), nullptr);
  const uint32_t end = seq_of(p.out_a.frames.back()).second;
  p.b.begin_batch();
  deliver(p.out_a, p.b);
  EXPECT_TRUE(p.out_b.frames.empty());  // held for the batch's end
  p.b.end_batch();
  ASSERT_EQ(p.out_b.frames.size(), 1u);
  EXPECT_EQ(ack_of(p.out_b.frames.front()), end);  // all of it
  p.b.begin_batch();                               // a batch with nothing for the connection sends nothing
  p.b.end_batch();
  EXPECT_EQ(p.out_b.frames.size(), 1u);
}

TEST(TcpLayer, AnOutOfOrderSegmentInABatchIsAcknowledgedAtOnce) {
  Pair p;
  ASSERT_NE(established_with_data(p, 4), nullptr);
  const uint32_t gap = seq_of(p.out_a.frames.front()).first;
  p.out_a.frames.pop_front();  // lost: the others arrive above a gap
  p.b.begin_batch();
  deliver(p.out_a, p.b);
  EXPECT_EQ(p.out_b.frames.size(), 3u);  // a duplicate ACK for each, as the sender's recovery needs
  p.b.end_batch();
  EXPECT_EQ(p.out_b.frames.size(), 3u);
  for (const auto& f : p.out_b.frames) EXPECT_EQ(ack_of(f), gap);
}

TEST(TcpIsn, SipHashReferenceVectorAndRfc6528Properties) {
  // SipHash-2-4, key 00..0f, empty message: 0x726fdb47dd0e0e31 (the paper's first vector).
  EXPECT_EQ(siphash24(0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL, nullptr, 0), 0x726fdb47dd0e0e31ULL);
  // And for message 00..07 (8 bytes): 0x93f5f5799a932462.
  const uint8_t m[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(siphash24(0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL, m, 8), 0x93f5f5799a932462ULL);
  IsnGenerator g(11, 22), h(33, 44);
  const FourTuple t{kA, 1234, kB, 80}, u{kA, 1235, kB, 80};
  EXPECT_NE(g.isn(t, 0), g.isn(u, 0));                  // per tuple
  EXPECT_NE(g.isn(t, 0), h.isn(t, 0));                  // per secret
  EXPECT_EQ(g.isn(t, 4'000'000) - g.isn(t, 0), 1000u);  // the clock moves it 1 per 4 us
}

namespace {
// A server that closed first holds a released connection in TIME-WAIT; returns the client's last
// segment to it (its SEQ is the server's rcv_nxt, its TSval the server's ts_recent).
// With `server` set the server keeps its connection (the application has not closed the socket
// yet): the wait is that whole Connection's, not an entry of the compact table.
wire::TcpHeader server_in_time_wait(Pair& p, Connection*& client, Connection** server = nullptr) {
  EXPECT_TRUE(p.b.listen(80));
  auto c = p.a.connect(kA, kB, 80);
  EXPECT_TRUE(c);
  client = *c;
  p.pump();
  Connection* s = p.b.accept(80);
  EXPECT_NE(s, nullptr);
  const std::vector<uint8_t> answer(1024, 'x');
  EXPECT_EQ(s->send(answer), answer.size());
  s->close();  // the server closes first, as nginx does for `Connection: close`
  if (server == nullptr) {
    p.b.release(s);
  } else {
    *server = s;
  }
  p.pump();
  std::vector<uint8_t> buf(2048);
  EXPECT_EQ(client->recv(buf), answer.size());
  client->close();
  wire::TcpHeader last{};
  for (int i = 0; i < 20 && !(p.out_a.frames.empty() && p.out_b.frames.empty()); ++i) {
    for (const auto& frame : p.out_a.frames) {
      wire::ParsedFrame f;
      EXPECT_EQ(wire::parse_frame(frame, f), wire::ParseError::ok);
      last = f.tcp.h;
    }
    deliver(p.out_a, p.b);
    deliver(p.out_b, p.a);
  }
  EXPECT_EQ(p.b.connection_count(), server == nullptr ? 0u : 1u);
  EXPECT_EQ(p.b.time_wait_count(), server == nullptr ? 1u : 0u);
  if (server != nullptr) {
    EXPECT_EQ(s->state(), State::time_wait);
  }
  return last;
}

wire::TcpSegment new_syn(const Connection& client, uint32_t seq) {
  wire::TcpSegment syn;
  syn.h.src_port = client.tuple().local_port;
  syn.h.dst_port = 80;
  syn.h.seq = seq;
  syn.h.flags = wire::tcpflag::syn;
  syn.h.window = 64240;
  syn.h.options.has_mss = true;
  syn.h.options.mss = 1460;
  return syn;
}

// The client's ACK of `synack` that completes the handshake `syn` began (echoing its timestamp).
wire::TcpSegment handshake_ack(const wire::TcpSegment& syn, const wire::TcpHeader& synack) {
  wire::TcpSegment ack;
  ack.h.src_port = syn.h.src_port;
  ack.h.dst_port = syn.h.dst_port;
  ack.h.seq = syn.h.seq + 1;
  ack.h.ack = synack.seq + 1;
  ack.h.flags = wire::tcpflag::ack;
  ack.h.window = 64240;
  if (synack.options.has_timestamps) {
    ack.h.options.has_timestamps = true;
    ack.h.options.ts_val = syn.h.options.ts_val + 1;
    ack.h.options.ts_ecr = synack.options.ts_val;
  }
  return ack;
}

wire::TcpHeader only_answer(Outbox& out) {
  EXPECT_EQ(out.frames.size(), 1u);
  wire::ParsedFrame f;
  if (out.frames.empty()) return {};
  EXPECT_EQ(wire::parse_frame(out.frames.front(), f), wire::ParseError::ok);
  out.frames.clear();
  return f.tcp.h;
}
}  // namespace

// A client that reuses its port while the server still waits in TIME-WAIT for that 4-tuple (the
// kernel cycles its ephemeral ports in seconds at a few thousand connections a second) gets a
// SYN-ACK at once when its SYN is newer (RFC 6191: a newer timestamp; RFC 1122 4.2.2.13: a
// higher sequence number), as from Linux. Before, it got an ACK, answered it with an RST and
// waited a second to send its SYN again.
TEST(TcpLayer, ANewerSynReopensATimeWaitConnection) {
  Pair p;
  Connection* client = nullptr;
  const wire::TcpHeader last = server_in_time_wait(p, client);
  ASSERT_TRUE(last.options.has_timestamps);
  wire::TcpSegment syn = new_syn(*client, last.seq - 5000);  // below rcv_nxt: only the timestamp is newer
  syn.h.options.has_timestamps = true;
  syn.h.options.ts_val = last.options.ts_val + 1;
  p.b.input(kA, kB, syn);
  const wire::TcpHeader synack = only_answer(p.out_b);
  EXPECT_EQ(synack.flags, wire::tcpflag::syn | wire::tcpflag::ack);
  EXPECT_EQ(synack.ack, syn.h.seq + 1);
  EXPECT_EQ(p.b.stats().time_wait_reopened, 1u);
  EXPECT_EQ(p.b.time_wait_count(), 0u);  // the new incarnation replaced the TIME-WAIT entry
  EXPECT_EQ(p.b.connection_count(), 1u);
  // The handshake completes and the new connection is accepted.
  p.b.input(kA, kB, handshake_ack(syn, synack));
  Connection* s = p.b.accept(80);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->state(), State::established);
}

// Without timestamps, a SYN above everything the old connection received reopens it; its ISS
// lies past every sequence number the old one sent (Linux: snd_nxt + 65537).
TEST(TcpLayer, AHigherSequenceReopensATimeWaitConnectionWithALaterIss) {
  Pair p;
  Connection* client = nullptr;
  const wire::TcpHeader last = server_in_time_wait(p, client);
  p.b.input(kA, kB, new_syn(*client, last.seq + 100000));
  const wire::TcpHeader synack = only_answer(p.out_b);
  EXPECT_EQ(synack.flags, wire::tcpflag::syn | wire::tcpflag::ack);
  // The old connection's snd_max is the client's last ACK number (its answer and FIN acknowledged).
  EXPECT_EQ(synack.seq, last.ack + 65537);
}

// An old SYN (an older timestamp: PAWS; or, without timestamps, a sequence number inside what was
// received) does not end TIME-WAIT: it gets the ACK that TIME-WAIT answers with.
TEST(TcpLayer, AnOldSynDoesNotReopenATimeWaitConnection) {
  Pair p;
  Connection* client = nullptr;
  const wire::TcpHeader last = server_in_time_wait(p, client);
  wire::TcpSegment stale = new_syn(*client, last.seq + 100000);
  stale.h.options.has_timestamps = true;
  stale.h.options.ts_val = last.options.ts_val - 1;
  p.b.input(kA, kB, stale);
  EXPECT_EQ(only_answer(p.out_b).flags, wire::tcpflag::ack);
  p.b.input(kA, kB, new_syn(*client, last.seq - 1));
  EXPECT_EQ(only_answer(p.out_b).flags, wire::tcpflag::ack);
  EXPECT_EQ(p.b.stats().time_wait_reopened, 0u);
  EXPECT_EQ(p.b.time_wait_count(), 1u);
}

// A TIME-WAIT whose application still holds the socket (a whole Connection, not a table entry)
// takes a new incarnation's SYN by the same rule (time_wait_takes_syn): a SYN-ACK from an ISS past
// the old one's, where it answered with a challenge ACK before. The old connection ends as at the
// end of its wait, and is freed when the application lets it go.
TEST(TcpLayer, ANewerSynReopensATimeWaitTheApplicationStillHolds) {
  for (const bool by_timestamp : {true, false}) {
    SCOPED_TRACE(by_timestamp ? "newer timestamp" : "higher sequence number");
    Pair p;
    Connection* client = nullptr;
    Connection* old = nullptr;
    const wire::TcpHeader last = server_in_time_wait(p, client, &old);
    ASSERT_NE(old, nullptr);
    ASSERT_TRUE(last.options.has_timestamps);
    wire::TcpSegment syn = new_syn(*client, by_timestamp ? last.seq - 5000 : last.seq + 100000);
    if (by_timestamp) {
      syn.h.options.has_timestamps = true;
      syn.h.options.ts_val = last.options.ts_val + 1;
    }
    p.b.input(kA, kB, syn);
    const wire::TcpHeader synack = only_answer(p.out_b);
    EXPECT_EQ(synack.flags, wire::tcpflag::syn | wire::tcpflag::ack);
    EXPECT_EQ(synack.ack, syn.h.seq + 1);
    EXPECT_EQ(synack.seq, last.ack + 65537);
    EXPECT_EQ(p.b.stats().time_wait_reopened, 1u);
    EXPECT_EQ(old->state(), State::closed);
    EXPECT_EQ(old->close_reason(), CloseReason::none);
    p.b.input(kA, kB, handshake_ack(syn, synack));
    Connection* s = p.b.accept(80);
    ASSERT_NE(s, nullptr);
    EXPECT_NE(s, old);
    EXPECT_EQ(s->state(), State::established);
    EXPECT_EQ(p.b.connection_count(), 1u);
    p.b.release(old);  // the old one goes; the new one, on the same 4-tuple, stays
    EXPECT_EQ(s->state(), State::established);
    EXPECT_EQ(p.b.connection_count(), 1u);
  }
}

// An old SYN gets that Connection's ACK and leaves it waiting, as a table entry does.
TEST(TcpLayer, AnOldSynDoesNotReopenATimeWaitTheApplicationStillHolds) {
  Pair p;
  Connection* client = nullptr;
  Connection* old = nullptr;
  const wire::TcpHeader last = server_in_time_wait(p, client, &old);
  ASSERT_NE(old, nullptr);
  ASSERT_TRUE(last.flags & wire::tcpflag::fin);  // the client's FIN: RCV.NXT is past it
  p.b.input(kA, kB, new_syn(*client, last.seq - 1));
  const wire::TcpHeader a = only_answer(p.out_b);
  EXPECT_EQ(a.flags, wire::tcpflag::ack);
  EXPECT_EQ(a.ack, last.seq + 1);
  EXPECT_EQ(old->state(), State::time_wait);
  EXPECT_EQ(p.b.stats().time_wait_reopened, 0u);
}

// An RST inside the window but not at RCV.NXT gets no answer there and leaves it waiting, as a
// table entry and Linux's TIME-WAIT do (tcp_timewait_state_process); it got a challenge ACK before.
TEST(TcpLayer, AnInWindowRstOffRcvNxtIsDroppedByATimeWaitTheApplicationStillHolds) {
  Pair p;
  Connection* client = nullptr;
  Connection* old = nullptr;
  const wire::TcpHeader last = server_in_time_wait(p, client, &old);
  ASSERT_NE(old, nullptr);
  wire::TcpSegment rst;
  rst.h.src_port = client->tuple().local_port;
  rst.h.dst_port = 80;
  rst.h.seq = last.seq + 1 + 100;  // RCV.NXT is last.seq + 1 (past the FIN)
  rst.h.flags = wire::tcpflag::rst;
  p.b.input(kA, kB, rst);
  EXPECT_TRUE(p.out_b.frames.empty()) << p.out_b.frames.size() << " answers";
  EXPECT_EQ(old->state(), State::time_wait);
  EXPECT_EQ(old->stats().challenge_acks, 0u);
}

// An RST at RCV.NXT ends such a wait; the 4-tuple is free at once, as after an RST to a table
// entry: a SYN with an old sequence number reaches the listener instead of the closed Connection
// (which dropped it before).
TEST(TcpLayer, AfterAnRstEndsATimeWaitTheApplicationStillHoldsASynReachesTheListener) {
  Pair p;
  Connection* client = nullptr;
  Connection* old = nullptr;
  const wire::TcpHeader last = server_in_time_wait(p, client, &old);
  ASSERT_NE(old, nullptr);
  ASSERT_TRUE(last.flags & wire::tcpflag::fin);
  wire::TcpSegment rst = new_syn(*client, last.seq + 1);  // at RCV.NXT, past the client's FIN
  rst.h.flags = wire::tcpflag::rst;
  rst.h.options = {};
  p.b.input(kA, kB, rst);
  EXPECT_TRUE(p.out_b.frames.empty());
  EXPECT_EQ(old->state(), State::closed);
  const wire::TcpSegment syn = new_syn(*client, last.seq - 5000);
  p.b.input(kA, kB, syn);
  const wire::TcpHeader synack = only_answer(p.out_b);
  EXPECT_EQ(synack.flags, wire::tcpflag::syn | wire::tcpflag::ack);
  EXPECT_EQ(synack.ack, syn.h.seq + 1);
  p.b.release(old);
  EXPECT_EQ(p.b.connection_count(), 1u);  // the new half-open one
}
