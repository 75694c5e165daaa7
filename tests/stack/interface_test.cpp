// Two interfaces joined by an in-memory pipe: ARP resolution (and parking frames meanwhile), ICMP
// echo both ways, routing via the gateway, a TCP transfer byte-exact through the whole stack with
// and without transmit checksum offload, and garbage frames that must only be counted.
#include "stack/interface.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <deque>
#include <random>
#include <vector>

#include "base/random.hpp"
#include "pipe_device.hpp"
#include "stack/wire/checksum.hpp"
#include "stack/wire/frame.hpp"
#include "stack/wire/icmp.hpp"

using namespace weft;
using namespace weft::stack;

namespace {
const wire::Ipv4Addr kA = wire::Ipv4Addr::of(10, 7, 0, 1);
const wire::Ipv4Addr kB = wire::Ipv4Addr::of(10, 7, 0, 2);

using test::PipeDevice;

struct Net {
  // b_recv_buffer: B's TCP receive rings (0: the default).
  explicit Net(bool offload = false, uint32_t b_recv_buffer = 0)
      : b_recv(b_recv_buffer), da({{2, 0, 0, 0, 0, 0xa}}, offload), db({{2, 0, 0, 0, 0, 0xb}}, offload) {
    da.connect(&db);
    db.connect(&da);
  }
  IfaceConfig cfg(wire::Ipv4Addr ip) {
    IfaceConfig c;
    c.ip = ip;
    c.secret0 = ip.v;
    c.secret1 = 99;
    if (ip == kB && b_recv != 0) c.tcp.recv_buffer = b_recv;
    return c;
  }
  uint32_t b_recv;
  VirtualClock clock{1 * kSec};
  PipeDevice da, db;
  Interface a{da, clock, cfg(kA)};
  Interface b{db, clock, cfg(kB)};
  void pump(int rounds = 50) {
    for (int i = 0; i < rounds; ++i) {
      const size_t n = a.poll_rx() + b.poll_rx();
      a.poll_timers();
      b.poll_timers();
      if (n == 0 && da.queue_.empty() && db.queue_.empty()) {
        const int64_t next = std::min(a.next_deadline(), b.next_deadline());
        if (next == INT64_MAX) return;
        clock.set(std::max(clock.now_ns(), next));
      }
    }
  }
};
}  // namespace

TEST(Interface, ArpThenPingBothWays) {
  Net n;
  std::vector<std::pair<uint16_t, size_t>> replies;
  n.a.on_echo_reply([&](wire::Ipv4Addr from, uint16_t, uint16_t seq, size_t len) {
    EXPECT_EQ(from, kB);
    replies.push_back({seq, len});
  });
  ASSERT_TRUE(n.a.ping(kB, 7, 1, 56));  // parked behind an ARP request
  EXPECT_EQ(n.a.stats().arp_requests, 1u);
  n.pump();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0], (std::pair<uint16_t, size_t>{1, 56}));
  EXPECT_EQ(n.b.stats().arp_replies, 1u);
  EXPECT_EQ(n.b.stats().echo_replies, 1u);
  ASSERT_TRUE(n.a.ping(kB, 7, 2, 1400));  // resolved now: no second request
  n.pump();
  EXPECT_EQ(replies.size(), 2u);
  EXPECT_EQ(n.a.stats().arp_requests, 1u);
  EXPECT_FALSE(n.a.ping(kB, 7, 3, 1473));  // over the MTU
}

namespace {
wire::ParsedFrame parsed(const std::vector<uint8_t>& f) {
  wire::ParsedFrame p;
  EXPECT_EQ(wire::parse_frame(f, p), wire::ParseError::ok);
  return p;
}

// A has resolved B (one ping answered); `replies` counts A's echo replies from then on.
struct Resolved {
  Net n;
  size_t replies = 0;
  Resolved() {
    n.a.on_echo_reply([this](wire::Ipv4Addr, uint16_t, uint16_t, size_t) { ++replies; });
    EXPECT_TRUE(n.a.ping(kB, 7, 1, 56));
    n.pump();
    EXPECT_EQ(replies, 1u);
  }
};
}  // namespace

// Past the ARP entry's lifetime the ping leaves at once to the MAC known, and a unicast request to
// that MAC confirms it (Linux's STALE -> PROBE); before, the entry expired and every long
// connection's next frame waited behind a broadcast once a minute.
TEST(Interface, ANeighbourPastItsLifetimeKeepsItsTrafficWhileAUnicastRequestConfirmsIt) {
  Resolved r;
  ASSERT_EQ(r.replies, 1u);
  Net& n = r.n;
  size_t& replies = r.replies;
  n.clock.set(n.clock.now_ns() + 61 * kSec);
  const size_t before = n.da.sent.size();
  ASSERT_TRUE(n.a.ping(kB, 7, 2, 56));
  ASSERT_EQ(n.da.sent.size(), before + 2);
  const wire::ParsedFrame echo = parsed(n.da.sent[before]);
  EXPECT_EQ(echo.kind, wire::FrameKind::icmp);
  EXPECT_EQ(echo.eth.dst, n.db.mac());
  const wire::ParsedFrame ask = parsed(n.da.sent[before + 1]);
  ASSERT_EQ(ask.kind, wire::FrameKind::arp);
  EXPECT_EQ(ask.arp.op, wire::ArpOp::request);
  EXPECT_EQ(ask.arp.target_ip, kB);
  EXPECT_EQ(ask.eth.dst, n.db.mac());  // unicast
  n.pump();
  EXPECT_EQ(replies, 2u);
  ASSERT_TRUE(n.a.ping(kB, 7, 3, 56));  // confirmed: fresh again, no further request
  n.pump();
  EXPECT_EQ(replies, 3u);
  EXPECT_EQ(n.a.stats().arp_requests, 2u);
  EXPECT_EQ(n.a.stats().parked_dropped, 0u);
}

// A SYN flood from addresses nobody answers for makes the stack ask for each of them; those
// requests filled the 64-entry table and evicted the neighbour that answers (the differential
// runner's prober), whose next SYN-ACK then waited behind ARP.
TEST(Interface, RequestsForAddressesNobodyAnswersDoNotEvictANeighbour) {
  Resolved r;
  ASSERT_EQ(r.replies, 1u);
  Net& n = r.n;
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(n.a.ping(wire::Ipv4Addr::of(10, 7, 0, static_cast<uint8_t>(100 + i)), 7, 1, 56));
  const uint64_t asked = n.a.stats().arp_requests;
  const size_t before = n.da.sent.size();
  ASSERT_TRUE(n.a.ping(kB, 7, 2, 56));
  ASSERT_EQ(n.da.sent.size(), before + 1);
  EXPECT_EQ(parsed(n.da.sent[before]).kind, wire::FrameKind::icmp);
  EXPECT_EQ(n.a.stats().arp_requests, asked);
}

// Issue 26: a ping whose request came in fragments and whose reply exceeds the MTU got no reply;
// Linux fragments the reply. 4000 bytes of ICMP payload in three fragments from A: B's reply
// leaves in fragments no larger than the MTU, A reassembles it and its checksum holds.
TEST(Interface, EchoReplyLargerThanTheMtuLeavesInFragments) {
  Net n;
  std::vector<std::pair<uint16_t, size_t>> replies;
  n.a.on_echo_reply([&](wire::Ipv4Addr, uint16_t, uint16_t seq, size_t len) {
    replies.push_back({seq, len});
  });
  ASSERT_TRUE(n.a.ping(kB, 7, 1, 8));  // ARP both ways
  n.pump();
  ASSERT_EQ(replies.size(), 1u);
  std::vector<uint8_t> icmp(wire::kIcmpHeader + 4000);
  for (size_t i = wire::kIcmpHeader; i < icmp.size(); ++i) icmp[i] = static_cast<uint8_t>(i * 31);
  wire::emit_icmp(icmp, wire::icmptype::echo_request, 0, 7, 2, 4000);
  for (size_t off = 0; off < icmp.size(); off += 1480) {
    const size_t len = std::min<size_t>(1480, icmp.size() - off);
    std::vector<uint8_t> f(wire::kEthernetHeader + wire::kIpv4Header + len);
    wire::emit_ethernet(f, n.db.mac(), n.da.mac(), wire::ethertype::ipv4);
    wire::Ipv4Emit h;
    h.src = kA;
    h.dst = kB;
    h.protocol = wire::ipproto::icmp;
    h.ident = 4242;
    h.dont_fragment = false;
    h.frag_offset = static_cast<uint16_t>(off);
    h.more_fragments = off + len < icmp.size();
    wire::emit_ipv4(wire::MutBytes(f).subspan(wire::kEthernetHeader), h, len);
    std::copy(icmp.begin() + static_cast<long>(off), icmp.begin() + static_cast<long>(off + len),
              f.begin() + wire::kEthernetHeader + wire::kIpv4Header);
    n.db.queue_.push_back(std::move(f));
  }
  n.db.sent.clear();
  n.pump();
  EXPECT_EQ(n.b.stats().echo_replies, 2u);
  EXPECT_EQ(n.db.sent.size(), 3u);
  for (const auto& f : n.db.sent) EXPECT_LE(f.size(), wire::kEthernetHeader + 1500u);
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[1], (std::pair<uint16_t, size_t>{2, 4000}));
}

TEST(Interface, OffSubnetGoesToTheGateway) {
  Net n;
  IfaceConfig c = n.cfg(kA);
  c.gateway = kB;
  PipeDevice d({{2, 0, 0, 0, 0, 0xc}}, false);
  d.connect(&n.db);
  Interface a(d, n.clock, c);
  ASSERT_TRUE(a.ping(wire::Ipv4Addr::of(192, 0, 2, 99), 1, 1, 8));
  ASSERT_EQ(d.sent.size(), 1u);
  wire::ParsedFrame f;
  ASSERT_EQ(wire::parse_frame(d.sent[0], f), wire::ParseError::ok);
  ASSERT_EQ(f.kind, wire::FrameKind::arp);
  EXPECT_EQ(f.arp.target_ip, kB);  // asks for the gateway, not the destination
  IfaceConfig no_gw = n.cfg(kA);
  Interface lonely(d, n.clock, no_gw);
  EXPECT_FALSE(lonely.ping(wire::Ipv4Addr::of(192, 0, 2, 99), 1, 1, 8));
}

void transfer(bool offload, bool in_place = false) {
  Net n(offload);
  n.da.in_place = n.db.in_place = in_place;
  ASSERT_TRUE(n.b.tcp().listen(5201));
  auto c = n.a.tcp().connect(kA, kB, 5201);
  ASSERT_TRUE(c);
  n.pump();
  tcp::Connection* s = n.b.tcp().accept(5201);
  ASSERT_NE(s, nullptr);
  constexpr size_t kTotal = 1 << 20;
  size_t sent = 0, got = 0;
  std::vector<uint8_t> buf(64 * 1024);
  for (int round = 0; round < 100000 && got < kTotal; ++round) {
    while (sent < kTotal && (*c)->send_space() > 0) {
      const size_t k = std::min({buf.size(), kTotal - sent, (*c)->send_space()});
      for (size_t i = 0; i < k; ++i) buf[i] = static_cast<uint8_t>((sent + i) * 131 >> 3);
      sent += (*c)->send(wire::Bytes(buf.data(), k));
    }
    n.pump(4);
    for (size_t k; (k = s->recv(buf)) > 0; got += k)
      for (size_t i = 0; i < k; ++i) ASSERT_EQ(buf[i], static_cast<uint8_t>((got + i) * 131 >> 3));
  }
  EXPECT_EQ(got, kTotal);
  EXPECT_EQ(n.a.stats().rx_bad + n.b.stats().rx_bad, 0u);
  if (offload) {
    EXPECT_GT(n.da.completed, 700u);
  }
  if (in_place) {
    EXPECT_GT(n.da.committed, 700u);  // the data segments were built in the device's buffer
  } else {
    EXPECT_EQ(n.da.committed, 0u);
  }
}

TEST(Interface, TcpTransferThroughTheWholeStack) { transfer(false); }
TEST(Interface, TcpTransferWithChecksumOffload) { transfer(true); }
TEST(Interface, TcpTransferBuiltInPlace) { transfer(false, true); }
TEST(Interface, TcpTransferBuiltInPlaceWithChecksumOffload) { transfer(true, true); }

// Split receive (AF_PACKET's super-frames): frames past 200 bytes wait "in the kernel" and only
// their first 128 bytes show. In-order data is read straight into the connection's receive ring
// (Interface::place_large_frame); every 37th data frame is lost on the way, so segments also come
// out of order, when nothing may be placed (the ring's free space holds them) and they go the usual
// way. 1 MiB byte-exact, most of it placed.
TEST(Interface, LargeFramesAreReadStraightIntoTheReceiveRing) {
  Net n;
  n.db.split_over = 200;
  n.da.lose_every = 37;
  ASSERT_TRUE(n.b.tcp().listen(5201));
  auto c = n.a.tcp().connect(kA, kB, 5201);
  ASSERT_TRUE(c);
  n.pump();
  tcp::Connection* s = n.b.tcp().accept(5201);
  ASSERT_NE(s, nullptr);
  constexpr size_t kTotal = 1 << 20;
  size_t sent = 0, got = 0;
  std::vector<uint8_t> buf(64 * 1024);
  for (int round = 0; round < 100000 && got < kTotal; ++round) {
    while (sent < kTotal && (*c)->send_space() > 0) {
      const size_t k = std::min({buf.size(), kTotal - sent, (*c)->send_space()});
      for (size_t i = 0; i < k; ++i) buf[i] = static_cast<uint8_t>((sent + i) * 131 >> 3);
      sent += (*c)->send(wire::Bytes(buf.data(), k));
    }
    n.pump(4);
    for (size_t k; (k = s->recv(buf)) > 0; got += k)
      for (size_t i = 0; i < k; ++i) ASSERT_EQ(buf[i], static_cast<uint8_t>((got + i) * 131 >> 3)) << got + i;
  }
  EXPECT_EQ(got, kTotal);
  const size_t lost = n.da.lost;
  EXPECT_GT(lost, 10u);
  EXPECT_GT(n.b.stats().rx_placed, 400u);                          // most of ~730 data frames
  EXPECT_EQ(n.db.split_reads, n.b.stats().rx_placed);              // each placed frame read once
  EXPECT_GT(n.b.stats().rx_frames - n.b.stats().rx_placed, lost);  // out of order: the usual way
  EXPECT_EQ(n.b.stats().rx_bad, 0u);
  // Frames of a burst that continue the sequence are read as runs, one device call each.
  EXPECT_EQ(n.db.split_run_frames, n.db.split_reads);
  EXPECT_GT(n.db.split_run_frames, 2 * n.db.split_runs);
}

// Runs of large frames (Interface::place_large_frame, Device::receive_split_run) stop at a frame
// of another connection, at a gap, and where the receive ring would wrap: two connections whose
// frames alternate in bursts of 3, every 23rd data frame lost, a small receive ring (48 KiB, so
// it wraps every few runs), read in runs of at most 5. 2 x 512 KiB byte-exact; every frame read
// once, each placed frame in the right place.
TEST(Interface, RunsOfLargeFramesStopAtAnotherConnectionAGapOrTheRingsEnd) {
  Net n(false, 48 * 1024);
  n.db.split_over = 200;
  n.db.split_run_max = 5;
  n.da.lose_every = 23;
  ASSERT_TRUE(n.b.tcp().listen(5201));
  constexpr size_t kConns = 2, kTotal = 512 * 1024;
  std::array<tcp::Connection*, kConns> c{}, s{};
  for (size_t i = 0; i < kConns; ++i) {
    auto k = n.a.tcp().connect(kA, kB, 5201);
    ASSERT_TRUE(k);
    c[i] = *k;
    n.pump();
    s[i] = n.b.tcp().accept(5201);
    ASSERT_NE(s[i], nullptr);
  }
  std::array<size_t, kConns> sent{}, got{};
  std::vector<uint8_t> buf(64 * 1024);
  auto byte = [](size_t i, size_t at) { return static_cast<uint8_t>((at * 131 >> 3) + i * 77); };
  for (int round = 0; round < 100000 && (got[0] < kTotal || got[1] < kTotal); ++round) {
    for (size_t i = 0; i < kConns; ++i)
      while (sent[i] < kTotal && c[i]->send_space() > 0) {
        const size_t k = std::min({size_t{3 * 1448}, kTotal - sent[i], c[i]->send_space()});
        for (size_t j = 0; j < k; ++j) buf[j] = byte(i, sent[i] + j);
        sent[i] += c[i]->send(wire::Bytes(buf.data(), k));
        if (k == 3 * 1448) break;  // the two connections' frames interleave
      }
    n.pump(4);
    for (size_t i = 0; i < kConns; ++i)
      for (size_t k; (k = s[i]->recv(buf)) > 0; got[i] += k)
        for (size_t j = 0; j < k; ++j) ASSERT_EQ(buf[j], byte(i, got[i] + j)) << i << " " << got[i] + j;
  }
  EXPECT_EQ(got[0], kTotal);
  EXPECT_EQ(got[1], kTotal);
  EXPECT_GT(n.da.lost, 10u);
  const auto& st = n.b.stats();
  EXPECT_EQ(st.rx_bad, 0u);
  EXPECT_EQ(n.db.split_reads, st.rx_placed);
  EXPECT_EQ(n.db.split_run_frames, n.db.split_reads);
  EXPECT_GT(st.rx_placed, 200u);                          // of ~760 data frames
  EXPECT_GT(n.db.split_run_frames, n.db.split_runs);      // runs of more than one frame
  EXPECT_LE(n.db.split_run_frames, 5 * n.db.split_runs);  // and never past the device's limit
}

// Scatter receive (a TAP with vnet headers): every frame is read in one call into the headers'
// place in the interface's buffer and a guessed place for the rest, the receive ring of the
// connection that took the last in-order data. Two connections send at once (frames alternate, so
// many guesses name the other connection) and every 37th data frame is lost (out-of-order
// segments, whose guess is wrong too): every wrong guess is moved back and goes the usual way.
// 2 x 512 KiB byte-exact, and a good share taken in place.
TEST(Interface, ScatterReceivePutsPayloadInTheGuessedRing) {
  Net n;
  n.db.scatter = true;
  n.da.lose_every = 37;
  ASSERT_TRUE(n.b.tcp().listen(5201));
  constexpr size_t kConns = 2, kTotal = 512 * 1024;
  std::array<tcp::Connection*, kConns> c{}, s{};
  for (size_t i = 0; i < kConns; ++i) {
    auto k = n.a.tcp().connect(kA, kB, 5201);
    ASSERT_TRUE(k);
    c[i] = *k;
    n.pump();
    s[i] = n.b.tcp().accept(5201);
    ASSERT_NE(s[i], nullptr);
  }
  std::array<size_t, kConns> sent{}, got{};
  std::vector<uint8_t> buf(64 * 1024);
  auto byte = [](size_t i, size_t at) { return static_cast<uint8_t>((at * 131 >> 3) + i * 77); };
  for (int round = 0; round < 100000 && (got[0] < kTotal || got[1] < kTotal); ++round) {
    for (size_t i = 0; i < kConns; ++i)
      while (sent[i] < kTotal && c[i]->send_space() > 0) {
        const size_t k = std::min({size_t{3000}, kTotal - sent[i], c[i]->send_space()});
        for (size_t j = 0; j < k; ++j) buf[j] = byte(i, sent[i] + j);
        sent[i] += c[i]->send(wire::Bytes(buf.data(), k));
        if (k == 3000) break;  // the two connections' frames interleave
      }
    n.pump(4);
    for (size_t i = 0; i < kConns; ++i)
      for (size_t k; (k = s[i]->recv(buf)) > 0; got[i] += k)
        for (size_t j = 0; j < k; ++j) ASSERT_EQ(buf[j], byte(i, got[i] + j)) << i << " " << got[i] + j;
  }
  EXPECT_EQ(got[0], kTotal);
  EXPECT_EQ(got[1], kTotal);
  EXPECT_GT(n.da.lost, 10u);
  const auto& st = n.b.stats();
  EXPECT_EQ(n.db.scatter_reads, st.rx_frames);  // every frame read by scatter, none another way
  EXPECT_GT(st.rx_placed, 100u);                // of ~750 data frames
  EXPECT_LT(st.rx_placed, n.db.scatter_split);  // and wrong guesses too, which still arrived whole
  EXPECT_EQ(st.rx_bad, 0u);
}

// A segment whose payload comes in two pieces (the send ring wrapped) of every small length, odd
// ones included: the checksum taken while copying must match what the receiver computes.
TEST(Interface, SegmentChecksumAcrossTwoPiecesOfAnyLength) {
  for (bool in_place : {false, true}) {
    Net n(false);
    n.da.in_place = in_place;
    ASSERT_TRUE(n.a.ping(kB, 1, 1, 8));  // resolves B's MAC, so segments leave at once
    n.pump();
    std::vector<uint8_t> data(700);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 37 + 11);
    const tcp::FourTuple t{kA, 40000, kB, 5201};
    wire::TcpHeader h;
    h.src_port = 40000;
    h.dst_port = 5201;
    h.seq = 1000;
    h.ack = 7;
    h.flags = wire::tcpflag::ack | wire::tcpflag::psh;
    h.window = 512;
    for (size_t l1 : {0u, 1u, 2u, 3u, 7u, 300u, 301u})
      for (size_t l2 : {0u, 1u, 5u, 6u, 399u}) {
        n.da.sent.clear();
        n.a.send_segment(t, h, wire::Bytes(data.data(), l1), wire::Bytes(data.data() + l1, l2));
        ASSERT_EQ(n.da.sent.size(), 1u);
        wire::ParsedFrame f;
        ASSERT_EQ(wire::parse_frame(n.da.sent[0], f), wire::ParseError::ok) << l1 << "+" << l2;
        ASSERT_EQ(f.kind, wire::FrameKind::tcp);
        ASSERT_EQ(f.tcp.payload.size(), l1 + l2);
        EXPECT_TRUE(std::equal(f.tcp.payload.begin(), f.tcp.payload.end(), data.begin()));
      }
    EXPECT_EQ(n.da.committed, in_place ? 35u : 0u);
  }
}

// The stack reads the clock once per received frame, once per timer pass and once per transmit
// burst the application starts, not once per segment per use (send time, timestamp, RTT sample,
// RACK, CUBIC, ARP): Clock::Hold. Counted on a clock that tallies its readings, over a 1 MiB
// transfer; one leaked reading per segment sent or received would exceed the bound (without the
// holds: about six per frame).
TEST(Interface, ReadsTheClockOncePerFrameTimerPassAndBurst) {
  struct CountingClock final : Clock {
    const VirtualClock& v;
    mutable uint64_t reads = 0;
    explicit CountingClock(const VirtualClock& c) : v(c) {}
    int64_t read_ns() const override {
      ++reads;
      return v.now_ns();
    }
  };
  VirtualClock vclock{kSec};
  CountingClock clock(vclock);
  PipeDevice da({{2, 0, 0, 0, 0, 0xa}}, false), db({{2, 0, 0, 0, 0, 0xb}}, false);
  da.connect(&db);
  db.connect(&da);
  da.keep_sent = db.keep_sent = false;
  Net cfgs;
  Interface a(da, clock, cfgs.cfg(kA)), b(db, clock, cfgs.cfg(kB));
  ASSERT_TRUE(b.tcp().listen(5201));
  auto c = a.tcp().connect(kA, kB, 5201);
  ASSERT_TRUE(c);
  uint64_t passes = 0, sends = 0, batches = 0;
  auto pump = [&] {
    for (int i = 0; i < 4; ++i) {
      const size_t na = a.poll_rx(), nb = b.poll_rx(), n = na + nb;
      batches += (na > 0) + (nb > 0);  // a batch's held ACKs leave at its end, on one reading
      a.poll_timers();
      b.poll_timers();
      passes += 2;
      if (n == 0 && da.queue_.empty() && db.queue_.empty()) {
        const int64_t next = std::min(a.next_deadline(), b.next_deadline());
        if (next == INT64_MAX) return;
        vclock.set(std::max(vclock.now_ns(), next));
      }
    }
  };
  for (int i = 0; i < 10; ++i) pump();
  tcp::Connection* s = b.tcp().accept(5201);
  ASSERT_NE(s, nullptr);
  const uint64_t reads0 = clock.reads, frames0 = a.stats().rx_frames + b.stats().rx_frames;
  const uint64_t segs0 = (*c)->stats().segments_out;
  passes = batches = 0;
  constexpr size_t kTotal = 1 << 20;
  size_t sent = 0, got = 0;
  std::vector<uint8_t> buf(64 * 1024, 0x5a);
  for (int round = 0; round < 100000 && got < kTotal; ++round) {
    while (sent < kTotal && (*c)->send_space() > 0) {
      sent += (*c)->send(wire::Bytes(buf.data(), std::min({buf.size(), kTotal - sent, (*c)->send_space()})));
      ++sends;
    }
    pump();
    for (size_t k = 1; k > 0; got += k) {
      k = s->recv(buf);  // may send a window update: a burst of its own
      ++sends;
    }
  }
  ASSERT_EQ(got, kTotal);
  const uint64_t frames = a.stats().rx_frames + b.stats().rx_frames - frames0;
  const uint64_t reads = clock.reads - reads0;
  EXPECT_GT(frames, 718u);  // 1 MiB in 1460-byte segments (718), and their ACKs (one per batch)
  // A long burst reads the clock again every 8 segments (Connection::output).
  const uint64_t refreshes = ((*c)->stats().segments_out - segs0) / 8;
  EXPECT_LE(reads, frames + passes + sends + refreshes + batches)
      << reads << " readings: " << frames << " frames, " << passes << " timer passes, " << sends
      << " sends and receives, " << refreshes << " refreshes, " << batches << " receive batches";
  EXPECT_FALSE(clock.held());
}

TEST(Interface, GarbageIsCountedNeverFatal) {
  Net n;
  ASSERT_TRUE(n.b.tcp().listen(80));
  auto c = n.a.tcp().connect(kA, kB, 80);
  n.pump();
  tcp::Connection* s = n.b.tcp().accept(80);
  ASSERT_NE(s, nullptr);
  // Frames the way a's device sent them, each damaged: truncated, bit-flipped, random.
  std::vector<std::vector<uint8_t>> good = n.da.sent;
  std::mt19937 rng(5);
  size_t injected = 0;
  for (const auto& g : good) {
    for (size_t cut = 1; cut < g.size(); cut += 3) {
      n.db.queue_.emplace_back(g.begin(), g.begin() + static_cast<long>(cut));
      ++injected;
    }
    for (int k = 0; k < 50; ++k) {
      auto f = g;
      f[14 + rng() % (f.size() - 14)] ^= static_cast<uint8_t>(1u << (rng() % 8));
      n.db.queue_.push_back(std::move(f));
      ++injected;
    }
  }
  for (int k = 0; k < 2000; ++k) {
    std::vector<uint8_t> f(1 + rng() % 200);
    for (auto& x : f) x = static_cast<uint8_t>(rng());
    if (f.size() > 13) f[12] = 0x08, f[13] = (k & 1) ? 0x00 : 0x06;
    const wire::MacAddr to = n.db.mac();
    if (f.size() > 6) std::copy(to.b.begin(), to.b.end(), f.begin());
    n.db.queue_.push_back(std::move(f));
    ++injected;
  }
  n.b.poll_rx(injected + 10);
  EXPECT_GT(n.b.stats().rx_bad, 1000u);
  // The connection still works.
  const std::vector<uint8_t> msg(3000, 0x42);
  EXPECT_EQ((*c)->send(msg), msg.size());
  n.pump();
  std::vector<uint8_t> buf(4000);
  EXPECT_EQ(s->recv(buf), msg.size());
  EXPECT_EQ(s->state(), tcp::State::established);
}
