// The socket API (stack/socket.hpp) over two interfaces joined by an in-memory pipe, on a virtual
// clock: TCP connect/accept/send/recv/close with the events each step must raise and the event
// fd's state, the errors (refused, reset, stale handles, would-block), the zero-copy paths
// byte-exact across ring wrap-around, and UDP sockets with ICMP port unreachable (rate limited).
#include "stack/socket.hpp"

#include <gtest/gtest.h>
#include <poll.h>

#include <map>
#include <vector>

#include "pipe_device.hpp"
#include "stack/wire/frame.hpp"

using namespace weft;
using namespace weft::stack;

namespace {
const wire::Ipv4Addr kA = wire::Ipv4Addr::of(10, 8, 0, 1);
const wire::Ipv4Addr kB = wire::Ipv4Addr::of(10, 8, 0, 2);

IfaceConfig cfg(wire::Ipv4Addr ip, uint32_t buffer) {
  IfaceConfig c;
  c.ip = ip;
  c.secret0 = ip.v;
  c.secret1 = 7;
  c.tcp.send_buffer = c.tcp.recv_buffer = buffer;
  return c;
}

struct Net {
  explicit Net(uint32_t buffer = 64 * 1024, bool offload = false)
      : da({{2, 0, 0, 0, 0, 0xa}}, offload),
        db({{2, 0, 0, 0, 0, 0xb}}, offload),
        ia(da, clock, cfg(kA, buffer)),
        ib(db, clock, cfg(kB, buffer)) {
    da.connect(&db);
    db.connect(&da);
  }
  // Delivers frames and runs timers until nothing moves (virtual time jumps to the next timer
  // only when `idle_ns` allows it).
  void pump(int rounds = 200, int64_t idle_ns = 0) {
    const int64_t until = clock.now_ns() + idle_ns;
    for (int i = 0; i < rounds; ++i) {
      a.poll();
      b.poll();
      if (da.queue_.empty() && db.queue_.empty()) {
        const int64_t next = std::min(a.next_deadline(), b.next_deadline());
        if (next > until) return;
        clock.set(std::max(clock.now_ns(), next));
      }
    }
  }
  VirtualClock clock{1 * kSec};
  test::PipeDevice da, db;
  Interface ia, ib;
  Sockets a{ia}, b{ib};
};

std::map<SockId, uint32_t> drain(Sockets& s) {
  std::map<SockId, uint32_t> m;
  SockEvent ev[4];
  for (size_t n; (n = s.events(ev)) > 0;)
    for (size_t i = 0; i < n; ++i) m[ev[i].id] |= ev[i].events;
  return m;
}

bool fd_readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}
}  // namespace

TEST(Socket, ConnectAcceptEchoCloseWithEvents) {
  Net n;
  auto l = n.b.listen(7);
  ASSERT_TRUE(l);
  EXPECT_EQ(n.b.listen(7).error(), SockErr::in_use);
  EXPECT_EQ(n.b.accept(*l).error(), SockErr::again);
  auto c = n.a.connect(kB, 7);
  ASSERT_TRUE(c);
  EXPECT_EQ(n.a.recv(*c, {}).error(), SockErr::again);
  ASSERT_GE(n.a.event_fd(), 0);
  EXPECT_FALSE(fd_readable(n.b.event_fd()));
  n.pump();
  EXPECT_TRUE(fd_readable(n.b.event_fd()));
  auto eb = drain(n.b);
  EXPECT_FALSE(fd_readable(n.b.event_fd()));  // drained: the fd is clear again
  EXPECT_EQ(eb[*l], sockev::acceptable);
  auto ea = drain(n.a);
  EXPECT_EQ(ea[*c], sockev::writable);  // the connect completed
  auto s = n.b.accept(*l);
  ASSERT_TRUE(s);
  EXPECT_EQ(n.b.accept(*l).error(), SockErr::again);

  const std::string msg = "hello, stack";
  ASSERT_EQ(n.a.send(*c, wire::Bytes(reinterpret_cast<const uint8_t*>(msg.data()), msg.size())).value(),
            msg.size());
  n.pump();
  eb = drain(n.b);
  EXPECT_EQ(eb[*s], sockev::readable);
  uint8_t buf[64];
  auto got = n.b.recv(*s, buf);
  ASSERT_TRUE(got);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), *got), msg);
  EXPECT_EQ(n.b.recv(*s, buf).error(), SockErr::again);
  ASSERT_EQ(n.b.send(*s, wire::Bytes(buf, *got)).value(), msg.size());
  n.pump();
  ea = drain(n.a);
  EXPECT_EQ(ea[*c], sockev::readable);
  EXPECT_EQ(n.a.recv(*c, buf).value(), msg.size());

  // a closes: b sees end of stream (readable, recv 0), then closes too; b's side ends at once
  // (LAST-ACK then CLOSED), a's in TIME-WAIT in the background after its handle is gone.
  const uint16_t a_port = n.a.local_port(*c);
  EXPECT_GE(a_port, 49152);
  n.a.close(*c);
  EXPECT_EQ(n.a.send(*c, wire::Bytes(buf, 1)).error(), SockErr::bad_socket);
  n.pump();
  eb = drain(n.b);
  EXPECT_EQ(eb[*s], sockev::readable);
  EXPECT_EQ(n.b.recv(*s, buf).value(), 0u);
  EXPECT_TRUE(n.b.send(*s, wire::Bytes(buf, 1)));  // half-close: b may still send
  n.b.close(*s);
  n.pump();
  EXPECT_EQ(n.ib.tcp().connection_count(), 0u);
  EXPECT_EQ(n.ia.tcp().connection_count(), 0u);  // closed by the application: its TIME-WAIT is an entry
  EXPECT_EQ(n.ia.tcp().time_wait_count(), 1u);   // in the compact table, not a Connection
  n.clock.advance(61 * kSec);                    // a wait's end is no timer of its own: the next run ends it
  n.pump();
  EXPECT_EQ(n.ia.tcp().time_wait_count(), 0u);
  EXPECT_EQ(n.a.open_sockets(), 0u);
  EXPECT_EQ(n.b.open_sockets(), 1u);
}

// poll() sends what the frames it took in made (a SYN-ACK) at once; poll_no_flush() leaves it in
// the device's batch for the caller's flush, so an event loop sends it with its own answers in one
// batch (posix/runtime.cpp: one sendmmsg per loop pass).
TEST(Socket, PollNoFlushLeavesTheAnswersInTheDeviceBatch) {
  Net n;
  auto l = n.b.listen(80);
  ASSERT_TRUE(l);
  auto c1 = n.a.connect(kB, 80);  // the first connection also resolves both neighbours
  ASSERT_TRUE(c1);
  n.pump();
  ASSERT_TRUE(n.b.accept(*l));
  n.db.hold = true;
  auto c2 = n.a.connect(kB, 80);
  ASSERT_TRUE(c2);
  n.a.poll();
  ASSERT_EQ(n.db.queue_.size(), 1u);  // the SYN
  const size_t flushes = n.db.flushes;
  n.b.poll_no_flush();
  EXPECT_TRUE(n.db.queue_.empty());  // taken in
  EXPECT_EQ(n.db.held.size(), 1u);   // the SYN-ACK waits in the batch
  EXPECT_TRUE(n.da.queue_.empty());
  EXPECT_EQ(n.db.flushes, flushes);
  n.ib.flush();
  EXPECT_EQ(n.da.queue_.size(), 1u);  // and leaves with the caller's flush
  n.pump();
  ASSERT_TRUE(n.b.accept(*l));

  auto c3 = n.a.connect(kB, 80);
  ASSERT_TRUE(c3);
  n.a.poll();
  n.b.poll();  // poll() flushes by itself
  EXPECT_TRUE(n.db.held.empty());
  EXPECT_EQ(n.da.queue_.size(), 1u);
}

TEST(Socket, RefusedResetAndStaleHandles) {
  Net n;
  auto c = n.a.connect(kB, 9);  // nothing listens: RST
  ASSERT_TRUE(c);
  n.pump();
  EXPECT_TRUE(fd_readable(n.a.event_fd()));  // made only now, with news already waiting
  auto ea = drain(n.a);
  EXPECT_FALSE(fd_readable(n.a.event_fd()));
  EXPECT_EQ(ea[*c], sockev::readable | sockev::hangup | sockev::error);
  EXPECT_EQ(n.a.error(*c), SockErr::refused);
  uint8_t buf[8];
  EXPECT_EQ(n.a.recv(*c, buf).error(), SockErr::refused);
  EXPECT_EQ(n.a.send(*c, wire::Bytes(buf, 1)).error(), SockErr::refused);
  n.a.close(*c);
  EXPECT_EQ(n.a.recv(*c, buf).error(), SockErr::bad_socket);
  // The slot is reused under a new handle; the old one still misses.
  auto l = n.b.listen(9);
  ASSERT_TRUE(l);
  auto c2 = n.a.connect(kB, 9);
  ASSERT_TRUE(c2);
  EXPECT_NE(*c2, *c);
  EXPECT_EQ(n.a.recv(*c, buf).error(), SockErr::bad_socket);
  n.pump();
  auto s = n.b.accept(*l);
  ASSERT_TRUE(s);
  drain(n.a);
  n.b.abort(*s);  // RST to a
  n.pump();
  ea = drain(n.a);
  EXPECT_EQ(ea[*c2], sockev::readable | sockev::hangup | sockev::error);
  EXPECT_EQ(n.a.error(*c2), SockErr::reset);
  EXPECT_EQ(n.a.recv(*c2, buf).error(), SockErr::reset);
  EXPECT_EQ(n.a.recv(*l, buf).error(), SockErr::bad_socket);  // another stack's handle, another kind
}

TEST(Socket, WouldBlockThenWritableAfterThePeerReads) {
  Net n(16 * 1024);
  auto l = n.b.listen(80);
  auto c = n.a.connect(kB, 80);
  n.pump();
  auto s = n.b.accept(*l);
  ASSERT_TRUE(s);
  drain(n.a);
  std::vector<uint8_t> big(100 * 1024, 0x5a);
  size_t queued = 0;
  for (int i = 0; i < 50; ++i) {  // until both rings are full and nothing moves any more
    if (auto r = n.a.send(*c, big)) queued += *r;
    n.pump(20, 100 * kMs);  // delayed ACKs included
  }
  EXPECT_EQ(n.a.send(*c, big).error(), SockErr::again);
  // a's 16 KiB send ring is full and b's 16 KiB receive ring holds all but less than a segment
  // (sender silly-window avoidance keeps the tail back).
  EXPECT_GT(queued, 32u * 1024 - 1448);
  EXPECT_LE(queued, 32u * 1024);
  EXPECT_EQ(drain(n.a)[*c] & sockev::writable, 0u);
  std::vector<uint8_t> buf(64 * 1024);
  size_t got = 0;
  for (int i = 0; i < 10; ++i) {
    for (SockResult<size_t> r; (r = n.b.recv(*s, buf)) && *r > 0;) got += *r;
    n.pump(20, 100 * kMs);
  }
  EXPECT_EQ(got, queued);
  EXPECT_EQ(drain(n.a)[*c], sockev::writable);
}

// A receive ring the application has emptied starts again at the front of its memory (the next
// segment lands in cache-warm bytes), but not while out-of-order data is parked past the tail:
// that data is placed relative to the tail and would be read from the wrong bytes.
TEST(Socket, AnEmptiedReceiveRingRewindsUnlessOutOfOrderDataWaits) {
  Net n;
  auto l = n.b.listen(80);
  auto c = n.a.connect(kB, 80);
  n.pump();
  auto s = n.b.accept(*l);
  ASSERT_TRUE(s);
  ASSERT_TRUE(n.a.set_nagle(*c, false));
  std::vector<uint8_t> chunk(1000);
  auto send_chunk = [&](uint8_t tag) {
    for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<uint8_t>(tag + i * 13);
    ASSERT_EQ(n.a.send(*c, chunk).value(), chunk.size());
  };
  auto expect_chunk = [&](wire::Bytes got, uint8_t tag) {
    ASSERT_EQ(got.size(), chunk.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], static_cast<uint8_t>(tag + i * 13)) << i;
  };
  send_chunk(1);
  n.pump();
  auto v = n.b.recv_view(*s);
  ASSERT_TRUE(v);
  const uint8_t* front = v->first.data();
  expect_chunk(v->first, 1);
  ASSERT_TRUE(n.b.consume(*s, chunk.size()));
  // Emptied with nothing out of order: the next segment lands at the front again.
  send_chunk(2);
  n.pump();
  v = n.b.recv_view(*s);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->first.data(), front);
  expect_chunk(v->first, 2);
  // Three more segments; the first of them is held back, so the other two wait out of order.
  send_chunk(3);
  ASSERT_EQ(n.db.queue_.size(), 1u);
  auto held = std::move(n.db.queue_.front());
  n.db.queue_.pop_front();
  send_chunk(4);
  send_chunk(5);
  n.b.poll();                                  // b alone: a would resend chunk 3 at once on the SACKs (RACK)
  ASSERT_TRUE(n.b.consume(*s, chunk.size()));  // chunk 2: the ring is empty, chunks 4 and 5 wait
  EXPECT_EQ(n.b.recv_view(*s).error(), SockErr::again);
  n.db.queue_.push_back(std::move(held));
  n.pump();
  std::vector<uint8_t> all(4000);
  ASSERT_EQ(n.b.recv(*s, all).value(), 3000u);
  for (int k = 0; k < 3; ++k)
    expect_chunk(wire::Bytes(all.data() + k * chunk.size(), chunk.size()), static_cast<uint8_t>(3 + k));
}

// 1 MiB each way through the zero-copy calls only, with 16 KiB rings so views wrap many times.
TEST(Socket, ZeroCopySendAndReceiveAreByteExact) {
  Net n(16 * 1024);
  auto l = n.b.listen(80);
  auto c = n.a.connect(kB, 80);
  n.pump();
  auto s = n.b.accept(*l);
  ASSERT_TRUE(s);
  constexpr size_t kTotal = 1 << 20;
  auto byte = [](size_t i) { return static_cast<uint8_t>((i * 2654435761u) >> 11); };
  size_t sent = 0, got = 0, wrapped_views = 0;
  for (int round = 0; round < 100000 && got < kTotal; ++round) {
    if (sent < kTotal) {
      if (auto r = n.a.send_reserve(*c)) {
        size_t k = 0;
        for (wire::MutBytes piece : {r->first, r->second})
          for (size_t i = 0; i < piece.size() && sent + k < kTotal; ++i, ++k) piece[i] = byte(sent + k);
        sent += n.a.send_commit(*c, k).value();
      } else {
        ASSERT_EQ(r.error(), SockErr::again);
      }
    }
    n.pump(4);
    auto v = n.b.recv_view(*s);
    if (!v) {
      ASSERT_EQ(v.error(), SockErr::again);
      continue;
    }
    if (!v->second.empty()) ++wrapped_views;
    size_t k = 0;
    for (wire::Bytes piece : {v->first, v->second})
      for (uint8_t x : piece) ASSERT_EQ(x, byte(got + k++));
    // Consume in two steps: the rest of the view stays put.
    const size_t half = k / 2;
    ASSERT_TRUE(n.b.consume(*s, half));
    auto v2 = n.b.recv_view(*s);
    ASSERT_TRUE(v2);
    EXPECT_EQ(v2->first.size() + v2->second.size(), k - half);
    // Every other round a few bytes stay behind: a ring that empties starts again at its front
    // (ByteRing::rewind_if_empty), so only a ring that never empties has views that wrap.
    const size_t keep = round % 2 == 0 ? std::min<size_t>(k - half, 100) : 0;
    ASSERT_TRUE(n.b.consume(*s, k - half - keep));
    got += k - keep;
  }
  EXPECT_EQ(got, kTotal);
  EXPECT_GT(wrapped_views, 0u);
  // End of stream: an empty view, not an error.
  n.a.close(*c);
  n.pump();
  auto v = n.b.recv_view(*s);
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->first.empty() && v->second.empty());
  EXPECT_EQ(n.b.recv(*s, {}).value(), 0u);
}

TEST(Socket, UdpSendToRecvFromAndTruncation) {
  Net n;
  auto ua = n.a.udp_bind(0);
  auto ub = n.b.udp_bind(5353);
  ASSERT_TRUE(ua && ub);
  EXPECT_EQ(n.b.udp_bind(5353).error(), SockErr::in_use);
  const uint16_t pa = n.a.local_port(*ua);
  EXPECT_GE(pa, 49152);
  std::vector<uint8_t> d(1000);
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<uint8_t>(i);
  ASSERT_EQ(n.a.sendto(*ua, kB, 5353, d).value(), 1000u);
  ASSERT_EQ(n.a.sendto(*ua, kB, 5353, wire::Bytes(d.data(), 3)).value(), 3u);
  EXPECT_EQ(n.a.sendto(*ua, kB, 5353, std::vector<uint8_t>(65508)).error(), SockErr::too_big);
  EXPECT_EQ(n.a.sendto(*ua, wire::Ipv4Addr::of(192, 0, 2, 1), 53, d).error(), SockErr::no_route);
  n.pump();
  EXPECT_EQ(drain(n.b)[*ub], sockev::readable);
  std::vector<uint8_t> out(2000);
  auto r = n.b.recvfrom(*ub, out);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->src, kA);
  EXPECT_EQ(r->src_port, pa);
  EXPECT_EQ(r->len, 1000u);
  EXPECT_FALSE(r->truncated);
  EXPECT_TRUE(std::equal(d.begin(), d.end(), out.begin()));
  r = n.b.recvfrom(*ub, wire::MutBytes(out.data(), 2));  // the rest of the datagram is dropped
  ASSERT_TRUE(r);
  EXPECT_EQ(r->len, 3u);
  EXPECT_TRUE(r->truncated);
  EXPECT_EQ(n.b.recvfrom(*ub, out).error(), SockErr::again);
  // Back the other way to the ephemeral port.
  ASSERT_TRUE(n.b.sendto(*ub, kA, pa, wire::Bytes(d.data(), 10)));
  n.pump();
  EXPECT_EQ(n.a.recvfrom(*ua, out).value().len, 10u);
  EXPECT_EQ(n.ib.stats().icmp_unreach_sent, 0u);
}

// MSG_PEEK: socat's UDP-RECVFROM peeks at the first datagram to learn its sender, then reads it.
// Before, the peek took the datagram and the read that followed waited for good.
TEST(Socket, UdpPeekLeavesTheDatagramForTheNextRead) {
  Net n;
  auto ua = n.a.udp_bind(0);
  auto ub = n.b.udp_bind(5354);
  ASSERT_TRUE(ua && ub);
  const std::vector<uint8_t> first{1, 2, 3, 4, 5}, second{9, 8};
  ASSERT_TRUE(n.a.sendto(*ua, kB, 5354, first));
  ASSERT_TRUE(n.a.sendto(*ua, kB, 5354, second));
  n.pump();
  std::vector<uint8_t> out(64, 0);
  for (int i = 0; i < 2; ++i) {  // peeked twice, whole and cut short: both leave it queued
    auto r = n.b.recvfrom(*ub, wire::MutBytes(out.data(), i == 0 ? out.size() : 2), true);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->len, 5u);
    EXPECT_EQ(r->src_port, n.a.local_port(*ua));
    EXPECT_EQ(out[0], 1);
    EXPECT_EQ(out[1], 2);
  }
  EXPECT_EQ(out[2], 3);
  std::fill(out.begin(), out.end(), 0);
  auto r = n.b.recvfrom(*ub, out);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->len, 5u);
  EXPECT_TRUE(std::equal(first.begin(), first.end(), out.begin()));
  r = n.b.recvfrom(*ub, out);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->len, 2u);
  EXPECT_EQ(out[0], 9);
  EXPECT_EQ(n.b.recvfrom(*ub, out, true).error(), SockErr::again);
}

TEST(Socket, UdpToAClosedPortDrawsARateLimitedPortUnreachable) {
  Net n;
  auto ua = n.a.udp_bind(4000);
  ASSERT_TRUE(ua);
  const std::vector<uint8_t> d(40, 1);
  ASSERT_TRUE(n.a.sendto(*ua, kB, 9999, d));
  n.pump();
  EXPECT_EQ(n.ib.stats().udp_no_port, 1u);
  EXPECT_EQ(n.ib.stats().icmp_unreach_sent, 1u);
  EXPECT_EQ(n.ia.stats().icmp_errors_received, 1u);
  // The ICMP message: type 3 code 3, quoting our IP header and the UDP header that follows it.
  ASSERT_FALSE(n.db.sent.empty());
  wire::ParsedFrame f;
  ASSERT_EQ(wire::parse_frame(n.db.sent.back(), f), wire::ParseError::ok);
  ASSERT_EQ(f.kind, wire::FrameKind::icmp);
  EXPECT_EQ(f.icmp.type, wire::icmptype::dest_unreachable);
  EXPECT_EQ(f.icmp.code, 3);
  ASSERT_EQ(f.icmp.payload.size(), 20u + 8u + 40u);
  EXPECT_EQ(f.icmp.payload[9], wire::ipproto::udp);
  EXPECT_EQ(f.icmp.payload[22] << 8 | f.icmp.payload[23], 9999);
  // A burst at one instant: 49 more tokens, the rest counted as limited; a second refills one.
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(n.a.sendto(*ua, kB, 9999, d));
  n.pump();
  EXPECT_EQ(n.ib.stats().icmp_unreach_sent, 50u);
  EXPECT_EQ(n.ib.stats().icmp_rate_limited, 151u);
  n.clock.advance(1 * kSec);
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(n.a.sendto(*ua, kB, 9999, d));
  n.pump();
  EXPECT_EQ(n.ib.stats().icmp_unreach_sent, 100u);
  // None for a datagram to the broadcast address.
  const uint64_t before = n.ib.stats().icmp_unreach_sent;
  ASSERT_TRUE(n.a.sendto(*ua, wire::Ipv4Addr::of(255, 255, 255, 255), 9999, d));
  n.clock.advance(1 * kSec);
  n.pump();
  EXPECT_EQ(n.ib.stats().udp_no_port, 262u);
  EXPECT_EQ(n.ib.stats().icmp_unreach_sent, before);
}

// Closing a listener resets what waited in its accept queue and leaves accepted connections be.
TEST(Socket, ClosingAListenerResetsUnacceptedConnectionsOnly) {
  Net n;
  auto l = n.b.listen(80);
  auto c1 = n.a.connect(kB, 80);
  auto c2 = n.a.connect(kB, 80);
  ASSERT_TRUE(l && c1 && c2);
  n.pump();
  auto s1 = n.b.accept(*l);
  ASSERT_TRUE(s1);  // c2 stays in the queue
  drain(n.a);
  n.b.close(*l);
  EXPECT_EQ(n.b.accept(*l).error(), SockErr::bad_socket);
  n.pump();
  auto ea = drain(n.a);
  EXPECT_EQ(ea.count(*c1), 0u);
  EXPECT_EQ(n.a.error(*c2), SockErr::reset);
  EXPECT_EQ(ea[*c2], sockev::readable | sockev::hangup | sockev::error);
  EXPECT_EQ(n.ib.tcp().connection_count(), 1u);
  // The accepted one still works both ways, and the port can be listened on again.
  const uint8_t x = 42;
  ASSERT_TRUE(n.a.send(*c1, wire::Bytes(&x, 1)));
  n.pump();
  uint8_t y = 0;
  EXPECT_EQ(n.b.recv(*s1, wire::MutBytes(&y, 1)).value(), 1u);
  EXPECT_EQ(y, 42);
  EXPECT_TRUE(n.b.listen(80));
}

// With transmit checksum offload the UDP checksum is left to the device (virtio NEEDS_CSUM at
// offset 6); the receiver verifies what the pipe completed.
TEST(Socket, UdpWithChecksumOffload) {
  Net n(64 * 1024, true);
  auto ua = n.a.udp_bind(1000);
  auto ub = n.b.udp_bind(2000);
  ASSERT_TRUE(ua && ub);
  std::vector<uint8_t> d(1472);
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<uint8_t>(i * 13);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(n.a.sendto(*ua, kB, 2000, d));
  n.pump();
  EXPECT_EQ(n.da.completed, 5u);
  std::vector<uint8_t> out(2000);
  for (int i = 0; i < 5; ++i) {
    auto r = n.b.recvfrom(*ub, out);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->len, d.size());
    EXPECT_TRUE(std::equal(d.begin(), d.end(), out.begin()));
  }
  EXPECT_EQ(n.ib.stats().rx_bad, 0u);
}

// ---- UDP connect() and ICMP errors to sockets ----
namespace {
// An ICMP destination unreachable from B to A quoting `frame` (one A sent: its IP header and the 8
// bytes after it), as B or a router on the way would send it. `seq_delta` changes the quoted TCP
// sequence number, as a blind forger's guess would differ from it.
std::vector<uint8_t> unreachable_from_b(const std::vector<uint8_t>& frame, uint8_t code, uint16_t mtu = 0,
                                        uint32_t seq_delta = 0) {
  std::vector<uint8_t> quote(frame.begin() + 14, frame.begin() + 14 + 28);
  uint32_t seq = uint32_t{quote[24]} << 24 | uint32_t{quote[25]} << 16 | uint32_t{quote[26]} << 8 | quote[27];
  seq += seq_delta;
  for (int i = 0; i < 4; ++i) quote[24 + i] = static_cast<uint8_t>(seq >> (24 - 8 * i));
  wire::L2L3 l;
  l.src_mac = {{2, 0, 0, 0, 0, 0xb}};
  l.dst_mac = {{2, 0, 0, 0, 0, 0xa}};
  l.ip.src = kB;
  l.ip.dst = kA;
  std::vector<uint8_t> out(200);
  out.resize(wire::build_icmp_frame(out, l, wire::icmptype::dest_unreachable, code, 0, mtu, quote));
  return out;
}

// The last frame `d` sent that carried TCP.
std::vector<uint8_t> last_tcp_frame(const test::PipeDevice& d) {
  for (auto it = d.sent.rbegin(); it != d.sent.rend(); ++it) {
    wire::ParsedFrame f;
    if (wire::parse_frame(*it, f) == wire::ParseError::ok && f.kind == wire::FrameKind::tcp) return *it;
  }
  return {};
}

// A and B learn each other's MAC (a datagram to a bound port), so a SYN leaves at once.
void resolve_arp(Net& n) {
  auto u = n.b.udp_bind(7);
  auto v = n.a.udp_bind(0);
  ASSERT_TRUE(u && v);
  ASSERT_TRUE(n.a.sendto(*v, kB, 7, std::vector<uint8_t>(1, 0)));
  n.pump();
  n.b.close(*u);
  n.a.close(*v);
}

// An established connection a -> b, accepted on b.
std::pair<SockId, SockId> established(Net& n, uint16_t port) {
  auto l = n.b.listen(port);
  auto c = n.a.connect(kB, port);
  EXPECT_TRUE(l && c);
  n.pump();
  auto s = n.b.accept(*l);
  EXPECT_TRUE(s);
  drain(n.a);
  drain(n.b);
  return {*c, s.value_or(0)};
}
}  // namespace

TEST(Socket, UdpConnectSendsToItsPeerAndReceivesOnlyFromIt) {
  Net n;
  auto ua = n.a.udp_bind(4000);
  auto ub = n.b.udp_bind(5000);
  auto other = n.b.udp_bind(5001);
  ASSERT_TRUE(ua && ub && other);
  const std::vector<uint8_t> d{1, 2, 3, 4, 5};
  EXPECT_EQ(n.a.send(*ua, d).error(), SockErr::not_connected);
  EXPECT_EQ(n.a.udp_connect(*ua, wire::Ipv4Addr::of(192, 0, 2, 1), 53).error(), SockErr::no_route);
  ASSERT_TRUE(n.a.udp_connect(*ua, kB, 5000));
  ASSERT_EQ(n.a.send(*ua, d).value(), 5u);
  n.pump();
  std::vector<uint8_t> out(64);
  auto r = n.b.recvfrom(*ub, out);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->src_port, 4000);
  EXPECT_TRUE(std::equal(d.begin(), d.end(), out.begin()));
  // From the peer: received; from another port of the same host: dropped.
  ASSERT_TRUE(n.b.sendto(*other, kA, 4000, std::vector<uint8_t>(9, 9)));
  ASSERT_TRUE(n.b.sendto(*ub, kA, 4000, std::vector<uint8_t>(7, 7)));
  n.pump();
  EXPECT_EQ(drain(n.a)[*ua], sockev::readable);
  EXPECT_EQ(n.a.recv(*ua, out).value(), 7u);
  EXPECT_EQ(out[0], 7);
  EXPECT_EQ(n.a.recv(*ua, out).error(), SockErr::again);
  EXPECT_EQ(n.ia.stats().icmp_unreach_sent, 0u);
  // Dissolved: datagrams from anyone again, and send() has no destination.
  ASSERT_TRUE(n.a.udp_connect(*ua, {}, 0));
  ASSERT_TRUE(n.b.sendto(*other, kA, 4000, std::vector<uint8_t>(9, 9)));
  n.pump();
  EXPECT_EQ(n.a.recv(*ua, out).value(), 9u);
  EXPECT_EQ(n.a.send(*ua, d).error(), SockErr::not_connected);
}

// As Linux: a connected socket learns of a port unreachable for its peer on its next call, once.
TEST(Socket, UdpConnectedPortUnreachableIsReportedOnce) {
  Net n;
  auto ua = n.a.udp_bind(4000);
  auto free_ua = n.a.udp_bind(4001);
  ASSERT_TRUE(ua && free_ua);
  ASSERT_TRUE(n.a.udp_connect(*ua, kB, 9999));  // nothing bound there
  ASSERT_TRUE(n.a.send(*ua, std::vector<uint8_t>(20, 1)));
  ASSERT_TRUE(n.a.sendto(*free_ua, kB, 9999, std::vector<uint8_t>(20, 1)));  // not connected: not told
  n.pump();
  EXPECT_EQ(n.ib.stats().icmp_unreach_sent, 2u);
  auto ev = drain(n.a);
  EXPECT_EQ(ev[*ua], sockev::readable | sockev::error);
  EXPECT_EQ(ev.count(*free_ua), 0u);
  EXPECT_EQ(n.a.error(*ua), SockErr::refused);
  std::vector<uint8_t> out(64);
  EXPECT_EQ(n.a.recv(*ua, out).error(), SockErr::refused);
  EXPECT_EQ(n.a.recv(*ua, out).error(), SockErr::again);
  EXPECT_EQ(n.a.error(*ua), SockErr::again);
  EXPECT_EQ(n.a.recvfrom(*free_ua, out).error(), SockErr::again);
  // Again, now reported by send().
  ASSERT_TRUE(n.a.send(*ua, std::vector<uint8_t>(20, 1)));
  n.clock.advance(1 * kSec);
  n.pump();
  EXPECT_EQ(n.a.send(*ua, std::vector<uint8_t>(20, 1)).error(), SockErr::refused);
  EXPECT_TRUE(n.a.send(*ua, std::vector<uint8_t>(20, 1)));
}

// RFC 5461 4: a connect that draws a port unreachable fails at once (ECONNREFUSED, as Linux); one
// quoting a sequence number that is not the SYN's (RFC 5927 4.1) is ignored.
TEST(Socket, TcpConnectFailsOnAnUnreachableQuotingItsSyn) {
  Net n;
  resolve_arp(n);
  auto c = n.a.connect(kB, 80);
  ASSERT_TRUE(c);
  const std::vector<uint8_t> syn = last_tcp_frame(n.da);
  ASSERT_FALSE(syn.empty());
  n.db.queue_.clear();  // the SYN never reaches B
  n.da.queue_.push_back(unreachable_from_b(syn, 3, 0, 1));
  n.da.queue_.push_back(unreachable_from_b(syn, 3, 0, 0x80000000u));
  n.a.poll();
  EXPECT_EQ(n.a.error(*c), SockErr::again);
  EXPECT_EQ(n.a.connection(*c)->state(), tcp::State::syn_sent);
  EXPECT_EQ(n.a.connection(*c)->stats().icmp_ignored, 2u);
  n.da.queue_.push_back(unreachable_from_b(syn, 3));
  n.a.poll();
  EXPECT_EQ(n.ia.stats().icmp_errors_received, 3u);
  EXPECT_EQ(drain(n.a)[*c], sockev::readable | sockev::hangup | sockev::error);
  EXPECT_EQ(n.a.error(*c), SockErr::refused);
  // A connect whose SYN draws an unreachable of `code` from B's side.
  const auto connect_drawing = [&n](uint16_t port, uint8_t code) {
    auto id = n.a.connect(kB, port);
    EXPECT_TRUE(id);
    n.db.queue_.clear();
    n.da.queue_.push_back(unreachable_from_b(last_tcp_frame(n.da), code));
    n.a.poll();
    return id.value_or(0);
  };
  // Host unreachable: EHOSTUNREACH; a router's net unreachable (no route): ENETUNREACH, as Linux's
  // icmp_err_convert.
  const SockId c3 = connect_drawing(82, 0);
  EXPECT_EQ(n.a.error(c3), SockErr::no_route);
  const SockId c2 = connect_drawing(81, 1);
  EXPECT_EQ(n.a.error(c2), SockErr::unreachable);
  // An error for a connection that does not exist (closed and freed) is counted and dropped.
  n.a.close(c2);
  n.da.queue_.push_back(unreachable_from_b(last_tcp_frame(n.da), 1));
  n.a.poll();
  EXPECT_EQ(n.ia.tcp().stats().icmp_no_connection, 1u);
}

// A host on the link that never answers ARP: as Linux (arp_error_report), the connect fails with
// host unreachable once ARP gives up (3 s), not after the SYN's retries (over two minutes). A
// connect to a host that answers is untouched.
TEST(Socket, ANeighbourThatNeverAnswersArpIsHostUnreachable) {
  Net n;
  const wire::Ipv4Addr nobody = wire::Ipv4Addr::of(10, 8, 0, 9);
  const int64_t t0 = n.clock.now_ns();
  auto c = n.a.connect(nobody, 80);
  ASSERT_TRUE(c);
  auto u = n.a.udp_bind(0);
  ASSERT_TRUE(u);
  ASSERT_TRUE(n.a.udp_connect(*u, nobody, 53));
  ASSERT_TRUE(n.a.sendto(*u, nobody, 53, std::vector<uint8_t>(20, 1)));
  n.pump(2000, 3 * kSec + 200 * kMs);  // ARP gives up 3 s after the first frame
  EXPECT_LE(n.clock.now_ns() - t0, 3 * kSec + 200 * kMs);
  EXPECT_EQ(n.a.error(*c), SockErr::unreachable) << "failed when ARP gave up, not after the SYN retries";
  EXPECT_EQ(n.a.connection(*c)->close_reason(), tcp::CloseReason::unreachable);
  // UDP, as Linux's udp_err without IP_RECVERR: host unreachable is not a hard error, so even a
  // connected socket is not told (it was counted and offered).
  std::vector<uint8_t> out(64);
  auto r = n.a.recvfrom(*u, out);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), SockErr::again);
  EXPECT_GE(n.ia.stats().arp_unreachable, 2u);
  auto ok = n.a.connect(kB, 80);  // B answers ARP: nothing of the above touches it
  ASSERT_TRUE(ok);
  n.pump(2000, 10 * kSec);
  EXPECT_EQ(n.a.error(*ok), SockErr::refused);  // B has no listener on 80: its RST, not an ARP failure
}

// RFC 1122 4.2.3.9: once established an unreachable is soft, and it is what a timeout reports.
TEST(Socket, TcpSoftErrorIsWhatATimeoutReports) {
  Net n;
  auto [c, s] = established(n, 80);
  n.da.drop_all = true;  // B is gone
  ASSERT_TRUE(n.a.send(c, std::vector<uint8_t>(100, 1)));
  n.a.poll();
  n.da.queue_.push_back(unreachable_from_b(last_tcp_frame(n.da), 1));
  n.a.poll();
  EXPECT_EQ(n.a.connection(c)->state(), tcp::State::established);
  EXPECT_EQ(n.a.error(c), SockErr::again);
  n.pump(2000, 3600 * kSec);
  EXPECT_EQ(n.a.connection(c)->close_reason(), tcp::CloseReason::timeout);
  EXPECT_EQ(n.a.error(c), SockErr::unreachable);
}

// SO_KEEPALIVE per connection (redis's tcp-keepalive, every server that must notice a vanished
// client): while the peer answers, the idle connection's probes draw ACKs and it stays; once the
// peer is gone, `probes` unanswered probes end it with a timeout. Turned off, it probes no more.
TEST(Socket, KeepaliveProbesAnIdleConnectionAndEndsItOnceThePeerIsGone) {
  Net n;
  auto [c, s] = established(n, 80);
  ASSERT_TRUE(n.a.set_keepalive(c, true, 10 * kSec, 2 * kSec, 3));
  const size_t before = n.da.sent.size();
  const int64_t t0 = n.clock.now_ns();
  n.pump(2000, 35 * kSec);  // the peer answers each probe
  EXPECT_EQ(n.a.connection(c)->state(), tcp::State::established);
  EXPECT_EQ(n.da.sent.size() - before, 3u) << "one probe per idle 10 s, each answered";
  n.da.drop_all = true;  // B is gone
  n.pump(2000, 20 * kSec);
  EXPECT_EQ(n.a.connection(c)->close_reason(), tcp::CloseReason::timeout);
  EXPECT_EQ(n.a.error(c), SockErr::timed_out);
  // The third answered probe at 30 s, then 10 s idle and 3 probes 2 s apart unanswered: 46 s.
  EXPECT_EQ(n.clock.now_ns() - t0, 46 * kSec);
  // Off: an idle connection sends nothing however long it waits.
  n.da.drop_all = false;
  auto [c2, s2] = established(n, 81);
  ASSERT_TRUE(n.a.set_keepalive(c2, true, 10 * kSec, 2 * kSec, 3));
  ASSERT_TRUE(n.a.set_keepalive(c2, false, 10 * kSec, 2 * kSec, 3));
  const size_t quiet = n.da.sent.size();
  n.pump(2000, 3600 * kSec);
  EXPECT_EQ(n.da.sent.size(), quiet);
  EXPECT_EQ(n.a.connection(c2)->state(), tcp::State::established);
}

// RFC 1191 through the whole stack: TCP leaves with DF; a "fragmentation needed" for 1000 bytes
// lowers the MSS, what was in flight goes again in that size, and B gets every byte.
TEST(Socket, TcpPathMtuDiscoveryIsByteExact) {
  Net n;
  auto [c, s] = established(n, 80);
  n.da.drop_all = true;  // the router drops what is too big
  std::vector<uint8_t> d(6000);
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<uint8_t>(i * 7 + 1);
  ASSERT_EQ(n.a.send(c, d).value(), d.size());
  n.a.poll();
  const size_t before = n.da.sent.size();
  const std::vector<uint8_t> big = last_tcp_frame(n.da);
  wire::ParsedFrame f;
  ASSERT_EQ(wire::parse_frame(big, f), wire::ParseError::ok);
  EXPECT_TRUE(f.ip.dont_fragment);
  EXPECT_GT(big.size(), 14u + 1000u);
  n.da.drop_all = false;
  n.da.queue_.push_back(unreachable_from_b(big, 4, 1000));
  n.a.poll();
  EXPECT_EQ(n.a.connection(c)->stats().pmtu_reductions, 1u);
  EXPECT_EQ(n.a.connection(c)->send_mss(), 1000u - 40u - 12u);  // timestamps are on
  n.pump();
  ASSERT_GT(n.da.sent.size(), before);
  for (size_t i = before; i < n.da.sent.size(); ++i) EXPECT_LE(n.da.sent[i].size(), 14u + 1000u);
  std::vector<uint8_t> out(8000);
  size_t got = 0;
  for (int i = 0; i < 10 && got < d.size(); ++i) {
    auto r = n.b.recv(s, wire::MutBytes(out).subspan(got));
    if (r) got += *r;
    n.pump();
  }
  ASSERT_EQ(got, d.size());
  EXPECT_TRUE(std::equal(d.begin(), d.end(), out.begin()));
  EXPECT_EQ(n.a.connection(c)->stats().timeouts, 0u);
}

// RFC 791 fragmentation on output: a datagram past the MTU leaves in pieces of 1480 bytes (the
// largest multiple of 8 that fits 1500 - 20) with one identification, MF on all but the last, no
// DF, and the checksum computed here even when the device offers to (it completes one frame only);
// B reassembles them byte-exact, the largest datagram IPv4 carries included.
TEST(Socket, UdpDatagramsPastTheMtuLeaveInFragments) {
  for (const bool offload : {false, true}) {
    SCOPED_TRACE(offload ? "with checksum offload" : "without");
    Net n(64 * 1024, offload);
    auto ua = n.a.udp_bind(1000);
    auto ub = n.b.udp_bind(2000);
    ASSERT_TRUE(ua && ub);
    resolve_arp(n);
    std::vector<uint8_t> d(4000);
    for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<uint8_t>(i * 31 + 3);
    const size_t before = n.da.sent.size();
    ASSERT_EQ(n.a.sendto(*ua, kB, 2000, d).value(), d.size());
    ASSERT_EQ(n.da.sent.size(), before + 3);
    uint16_t ident = 0;
    for (size_t k = 0; k < 3; ++k) {
      wire::ParsedFrame f;
      ASSERT_EQ(wire::parse_frame(n.da.sent[before + k], f), wire::ParseError::ok);
      ASSERT_EQ(f.kind, wire::FrameKind::ipv4_fragment);
      EXPECT_EQ(f.ip.frag_offset, k * 1480);
      EXPECT_EQ(f.ip.more_fragments, k < 2);
      EXPECT_FALSE(f.ip.dont_fragment);
      EXPECT_EQ(f.ip.payload.size(), k < 2 ? 1480u : 4008u - 2960u);
      if (k == 0) ident = f.ip.ident;
      EXPECT_EQ(f.ip.ident, ident);
    }
    EXPECT_EQ(n.ia.stats().fragments_sent, 3u);
    n.pump();
    std::vector<uint8_t> out(70000);
    auto r = n.b.recvfrom(*ub, out);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->len, d.size());
    EXPECT_TRUE(std::equal(d.begin(), d.end(), out.begin()));
    // The largest: 45 fragments.
    std::vector<uint8_t> big(65507);
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7 + i / 251);
    ASSERT_TRUE(n.a.sendto(*ua, kB, 2000, big));
    n.pump();
    r = n.b.recvfrom(*ub, out);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->len, big.size());
    EXPECT_TRUE(std::equal(big.begin(), big.end(), out.begin()));
    EXPECT_EQ(n.ib.stats().rx_bad, 0u);
    EXPECT_EQ(n.ia.stats().udp_fragmented, 2u);
  }
}
