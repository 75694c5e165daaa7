// The responder's TCP connection limits (issue 14, defect 3: 1,100 idle connections at a 1,024
// descriptor limit took the agent's own descriptors and it reported 100% loss). Connections beyond
// the cap are closed at once, idle ones are closed after the idle timeout, at the cap a connection
// idle for 5 s makes room for a new one, and a busy kept-open connection is never reaped.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <thread>
#include <vector>

#include "base/clock.hpp"
#include "net/address.hpp"
#include "net/socket.hpp"
#include "probe/ip/responder.hpp"
#include "probe/wire.hpp"
#include "prober_harness.hpp"

using namespace weft;
using namespace weft::probe;
using namespace std::chrono_literals;

namespace {

// TCP only, on 127.0.0.1, with `c`'s limits.
ResponderConfig tcp_only(ResponderConfig c) {
  c.listen_address = "127.0.0.1";
  c.serve_udp = false;
  return c;
}

Fd connect_to(uint16_t port) {
  auto c = net::tcp_connect_start(*net::SocketAddress::parse_ip("0.0.0.0", 0),
                                  *net::SocketAddress::parse_ip("127.0.0.1", port));
  EXPECT_TRUE(c);
  pollfd p{c->get(), POLLOUT, 0};
  EXPECT_EQ(poll(&p, 1, 2000), 1);
  return std::move(*c);
}

// True when the peer closed the connection within `ms` (a read returns 0 or an error).
bool closed_within(int fd, int ms) {
  const int64_t end = mono_ns() + int64_t{ms} * 1'000'000;
  while (mono_ns() < end) {
    pollfd q{fd, POLLIN, 0};
    if (poll(&q, 1, 50) == 1) {
      char b[256];
      ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN)) return true;
    }
  }
  return false;
}

void send_probe(int fd, uint64_t seq) {
  wire::Packet p;
  p.session = 0x5eed5eed00000003ULL;  // an older prober: final replies only
  p.seq = seq;
  p.prober_tx_ns = realtime_ns();
  uint8_t out[wire::kSize];
  wire::encode(p, std::span<uint8_t, wire::kSize>(out, wire::kSize));
  ASSERT_EQ(send(fd, out, sizeof out, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof out));
}

}  // namespace

TEST(ResponderLimits, ConnectionsBeyondTheCapAreClosedAtOnce) {
  ResponderConfig c;
  c.defer_accept = false;  // these connections send nothing: accepted at once, as before
  c.max_tcp_connections = 8;
  c.tcp_idle_timeout = 60s;
  probe_test::RunningResponder resp(tcp_only(c));
  std::vector<Fd> held;
  for (int i = 0; i < 8; ++i) held.push_back(connect_to(resp.r->tcp_port()));
  std::this_thread::sleep_for(200ms);  // all accepted
  std::vector<Fd> extra;
  for (int i = 0; i < 4; ++i) extra.push_back(connect_to(resp.r->tcp_port()));
  for (auto& e : extra) EXPECT_TRUE(closed_within(e.get(), 2000));
  for (auto& h : held) EXPECT_FALSE(closed_within(h.get(), 10));
  EXPECT_EQ(resp.r->counters().tcp_refused, 4u);
}

TEST(ResponderLimits, IdleConnectionsAreReapedBusyOnesKept) {
  ResponderConfig c;
  c.defer_accept = false;  // these connections send nothing: accepted at once, as before
  c.tcp_idle_timeout = 1s;
  probe_test::RunningResponder resp(tcp_only(c));
  std::vector<Fd> idle;
  for (int i = 0; i < 5; ++i) idle.push_back(connect_to(resp.r->tcp_port()));
  Fd busy = connect_to(resp.r->tcp_port());
  // The busy one sends a probe every 200 ms for 3 s (well past the idle timeout).
  bool busy_closed = false;
  for (int i = 0; i < 15 && !busy_closed; ++i) {
    send_probe(busy.get(), static_cast<uint64_t>(i + 1));
    busy_closed = closed_within(busy.get(), 200);
  }
  EXPECT_FALSE(busy_closed);
  for (auto& f : idle) EXPECT_TRUE(closed_within(f.get(), 1000));
  EXPECT_EQ(resp.r->counters().tcp_reaped, 5u);
}

TEST(ResponderLimits, AtTheCapAConnectionIdleFor5sMakesRoom) {
  ResponderConfig c;
  c.defer_accept = false;  // these connections send nothing: accepted at once, as before
  c.max_tcp_connections = 2;
  probe_test::RunningResponder resp(tcp_only(c));
  Fd a = connect_to(resp.r->tcp_port());
  Fd b = connect_to(resp.r->tcp_port());
  std::this_thread::sleep_for(5200ms);
  send_probe(b.get(), 1);  // b is busy again; a has been idle 5 s
  std::this_thread::sleep_for(100ms);
  Fd newcomer = connect_to(resp.r->tcp_port());
  EXPECT_TRUE(closed_within(a.get(), 2000));         // replaced
  EXPECT_FALSE(closed_within(newcomer.get(), 300));  // served
  EXPECT_FALSE(closed_within(b.get(), 10));
  EXPECT_EQ(resp.r->counters().tcp_refused, 0u);
}

// Connect probes (reset by the prober as soon as the handshake is done) are answered by the kernel
// and never reach the responder (TCP_DEFER_ACCEPT, issue 17); a connection that sends a probe frame
// is accepted and answered.
TEST(ResponderLimits, ConnectProbesAreNotAcceptedKeptOpenOnesAre) {
  ResponderConfig c;
  probe_test::RunningResponder resp(tcp_only(c));
  for (int i = 0; i < 20; ++i) {
    Fd probe = connect_to(resp.r->tcp_port());  // handshake done; closed with a reset
  }
  Fd kept = connect_to(resp.r->tcp_port());
  send_probe(kept.get(), 1);
  pollfd p{kept.get(), POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 2000), 1);
  uint8_t in[wire::kSize];
  ASSERT_EQ(recv(kept.get(), in, sizeof in, MSG_WAITALL), static_cast<ssize_t>(sizeof in));
  wire::Packet reply;
  ASSERT_EQ(wire::decode(in, reply), wire::ParseError::ok);
  EXPECT_EQ(reply.type, wire::Type::reply);
  EXPECT_EQ(reply.seq, 1u);
  // The responder counts an answer after its send returns: the reply may be read here first.
  for (int i = 0; i < 200 && resp.r->counters().answered == 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(resp.r->counters().answered, 1u);
  EXPECT_EQ(resp.r->counters().tcp_accepted, 1u);
}
