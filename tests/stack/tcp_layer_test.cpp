// The TCP layer: demultiplexing, listen/accept/connect, RSTs for segments that reach nothing,
// the backlog cap under a SYN flood (and that the flood leaves an open connection alone), release
// and reaping, one ACK per receive batch (and the ACKs that do not wait), and RFC 6528 ISNs
// (SipHash-2-4 against its reference vector).
#include "stack/tcp/tcp_layer.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <utility>
#include <vector>

#include "stack/clock.hpp"
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
  (*c)->close();
  p.pump();
  s->close();
  p.pump();
  EXPECT_EQ(s->state(), State::closed);
  EXPECT_EQ((*c)->state(), State::time_wait);
  p.b.release(s);
  EXPECT_EQ(p.b.connection_count(), 0u);
  p.a.release(*c);
  EXPECT_EQ(p.a.connection_count(), 1u);  // TIME-WAIT runs on after release
  p.clock.advance(61 * kSec);
  p.a.poll();
  EXPECT_EQ(p.a.connection_count(), 0u);
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
  // 1000 SYNs from spoofed ports that never complete.
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
  EXPECT_EQ(p.b.stats().syns_dropped, 996u);
  p.out_b.frames.clear();  // the SYN-ACKs to the spoofed addresses go nowhere
  const std::vector<uint8_t> msg(1000, 7);
  EXPECT_EQ((*c)->send(msg), 1000u);
  p.pump();
  std::vector<uint8_t> buf(2000);
  EXPECT_EQ(s->recv(buf), 1000u);
  // The half-open ones give up after their SYN-ACK retries (1+2+4+8+16+32+64 s), freeing the backlog.
  for (int i = 0; i < 200; ++i) {
    p.clock.advance(1 * kSec);
    p.b.poll();
    p.out_b.frames.clear();
  }
  EXPECT_EQ(p.b.connection_count(), 1u);
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
