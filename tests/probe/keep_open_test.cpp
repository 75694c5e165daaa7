// Kept-open TCP probes on loopback: kernel stamps at both ends (the prober's send stamp by byte
// offset, the responder's times in a follow-up frame), an older responder without follow-ups, and
// garbage on the stream (counted, connection closed and reopened, probing goes on).
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "base/clock.hpp"
#include "net/address.hpp"
#include "net/socket.hpp"
#include "probe/ip/prober.hpp"
#include "probe/wire.hpp"
#include "prober_harness.hpp"

using namespace weft;
using namespace weft::probe;
using namespace std::chrono_literals;
using namespace probe_test;

namespace {

// An echo server as responders were before follow-ups on streams: every probe frame is answered
// at once with a final reply carrying user-space times 1 us apart. On its first connection, the
// `garbage_at`-th frame (from 0) is answered with 48 bytes of garbage instead (-1: never).
class FakeEcho {
 public:
  explicit FakeEcho(int garbage_at = -1) : garbage_at_(garbage_at) {
    auto l = net::tcp_listener(*net::SocketAddress::parse_ip("127.0.0.1", 0), 16);
    if (!l) throw std::runtime_error(l.error().message);
    listener_ = std::move(*l);
    port = net::local_address(listener_.get())->port();
    th_ = std::thread([this] { loop(); });
  }
  ~FakeEcho() {
    done_ = true;
    th_.join();
  }
  uint16_t port = 0;
  std::atomic<int> connections{0}, probes{0}, odd_sessions{0}, garbage_sent{0};

 private:
  struct Conn {
    Fd fd;
    int index = 0;
    int frames = 0;
    std::vector<uint8_t> buf;
  };

  void loop() {
    std::vector<Conn> conns;
    while (!done_) {
      std::vector<pollfd> fds{{listener_.get(), POLLIN, 0}};
      for (auto& c : conns) fds.push_back({c.fd.get(), POLLIN, 0});
      poll(fds.data(), fds.size(), 5);
      if (fds[0].revents & POLLIN) {
        int fd = accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) conns.push_back({Fd(fd), connections++, 0, {}});
      }
      for (size_t i = 0; i < conns.size();) {
        if (serve(conns[i])) {
          ++i;
        } else {
          conns.erase(conns.begin() + static_cast<long>(i));
        }
      }
    }
  }

  bool serve(Conn& c) {
    uint8_t tmp[4096];
    const ssize_t n = recv(c.fd.get(), tmp, sizeof tmp, MSG_DONTWAIT);
    if (n == 0) return false;
    if (n < 0) return errno == EAGAIN;
    c.buf.insert(c.buf.end(), tmp, tmp + n);
    while (c.buf.size() >= wire::kSize) {
      wire::Packet p;
      if (wire::decode(std::span<const uint8_t>(c.buf.data(), wire::kSize), p) != wire::ParseError::ok)
        return false;
      c.buf.erase(c.buf.begin(), c.buf.begin() + wire::kSize);
      probes++;
      if (!wire::stream_followups_ok(p.session)) odd_sessions++;
      uint8_t out[wire::kSize];
      if (c.index == 0 && c.frames++ == garbage_at_) {
        std::memset(out, 0xAB, sizeof out);
        garbage_sent++;
      } else {
        p.type = wire::Type::reply;
        p.flags = 0;  // final: no follow-up coming
        p.responder_rx_ns = realtime_ns();
        p.responder_tx_ns = p.responder_rx_ns + 1000;
        wire::encode(p, std::span<uint8_t, wire::kSize>(out, wire::kSize));
      }
      if (send(c.fd.get(), out, sizeof out, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof out)) return false;
    }
    return true;
  }

  int garbage_at_;
  Fd listener_;
  std::atomic<bool> done_{false};
  std::thread th_;
};

ProberConfig keep_open_config() {
  auto cfg = fast_config(Protocol::tcp);
  cfg.tcp_keep_open = true;
  return cfg;
}

std::map<TimestampSource, int> sources(const Collected& c) {
  std::map<TimestampSource, int> m;
  for (auto& p : c.probes)
    if (p.answered) m[p.source]++;
  return m;
}

}  // namespace

TEST(KeepOpen, KernelStampsAtBothEnds) {
  RunningResponder resp;
  auto p = Prober::create(keep_open_config());
  ASSERT_TRUE(p);
  (*p)->set_targets({{"up", "127.0.0.1", resp.r->tcp_port()}});
  Collected c;
  auto ctr = run_for(**p, 1300ms, c);
  auto& w = c.totals["up"];
  EXPECT_GT(w.received, 60u);
  EXPECT_LE(w.lost * 50, w.sent);
  // Every answer has the prober's kernel send and receive stamps and the responder's kernel
  // receive and send times (follow-ups); a loaded machine may let a reply and its follow-up be
  // read together now and then, which honestly makes that probe `user`.
  auto src = sources(c);
  const int answered = static_cast<int>(w.received);
  EXPECT_GE(src[TimestampSource::kernel] * 10, answered * 9) << "user: " << src[TimestampSource::user];
  EXPECT_EQ(src[TimestampSource::hardware], 0);  // loopback has no NIC clock
  int checked = 0;
  for (auto& r : c.probes) {
    if (!r.answered || r.source != TimestampSource::kernel) continue;
    ++checked;
    EXPECT_GT(r.rtt_ns, 0);
    EXPECT_GE(r.responder_delay_ns, 0);
    EXPECT_LE(r.network_rtt_ns, r.rtt_ns);
    EXPECT_GT(r.network_rtt_ns, 0);  // the kernel stamps leave something for the network
    EXPECT_EQ(r.network_rtt_ns + r.responder_delay_ns, r.rtt_ns);
    EXPECT_LT(r.rtt_ns, 300'000'000);
  }
  EXPECT_GT(checked, 50);
  EXPECT_EQ(ctr.weird, 0u);
  EXPECT_EQ(ctr.malformed, 0u);
  EXPECT_EQ(ctr.duplicate, 0u);
  EXPECT_GE(resp.r->counters().followups, w.received * 9 / 10);
  EXPECT_EQ(w.responder_delay.count,
            w.rtt_incl_responder_delay.count);  // (the last window's) every answer had one
}

TEST(KeepOpen, AnOlderResponderWithoutFollowupsStillAnswers) {
  FakeEcho fake;
  auto cfg = keep_open_config();
  // A prober that waited for a follow-up here would resolve each answer only at its deadline.
  cfg.followup_grace = 10s;
  auto p = Prober::create(cfg);
  ASSERT_TRUE(p);
  (*p)->set_targets({{"old", "127.0.0.1", fake.port}});
  Collected c;
  auto ctr = run_for(**p, 1300ms, c);
  auto& w = c.totals["old"];
  EXPECT_GT(w.received, 60u);
  EXPECT_LE(w.lost * 50, w.sent);
  EXPECT_EQ(fake.odd_sessions.load(), 0);  // this prober says it reads follow-ups
  EXPECT_EQ(fake.connections.load(), 1);
  // The reply is final: its user-space times are the responder part, so the source is user.
  for (auto& r : c.probes) {
    if (!r.answered) continue;
    EXPECT_EQ(r.source, TimestampSource::user);
    EXPECT_EQ(r.responder_delay_ns, 1000);
    EXPECT_EQ(r.network_rtt_ns, r.rtt_ns - 1000);
  }
  EXPECT_EQ(w.timestamp_source, TimestampSource::user);
  // Resolved at once, not at the deadline (300 ms, ~30 probes): by the stop nearly every probe
  // sent had been reported answered.
  int reported = 0;
  for (auto& r : c.probes) reported += r.answered ? 1 : 0;
  EXPECT_GE(static_cast<uint64_t>(reported) + 3, ctr.sent);
  EXPECT_EQ(ctr.malformed, 0u);
}

TEST(KeepOpen, GarbageOnTheStreamIsCountedAndTheConnectionReopened) {
  FakeEcho fake(/*garbage_at=*/5);
  auto p = Prober::create(keep_open_config());
  ASSERT_TRUE(p);
  (*p)->set_targets({{"junk", "127.0.0.1", fake.port}});
  Collected c;
  auto ctr = run_for(**p, 1300ms, c);
  auto& w = c.totals["junk"];
  EXPECT_EQ(fake.garbage_sent.load(), 1);
  EXPECT_EQ(ctr.malformed, 1u);
  EXPECT_EQ(w.malformed, 1u);
  EXPECT_EQ(fake.connections.load(), 2);  // closed on garbage, opened again
  // Probing went on over the new connection: the garbage-answered probe and those sent while
  // reconnecting (up to ~100 ms) are lost, the rest answered.
  EXPECT_GT(w.received, 60u);
  EXPECT_GE(w.lost, 1u);
  EXPECT_LE(w.lost, 15u);
  EXPECT_EQ(w.received + w.lost, w.sent);
  int after = 0;
  for (auto& r : c.probes) after += r.answered && r.seq > 20 ? 1 : 0;
  EXPECT_GT(after, 60);
}

// The in-flight table grows when targets are added while kept-open probes (with send-stamp keys)
// are in flight; their keys are per connection and must not be filed with the UDP sockets' ones.
TEST(KeepOpen, TableGrowsWhileProbesAreInFlight) {
  RunningResponder resp;
  auto p = Prober::create(keep_open_config());
  ASSERT_TRUE(p);
  (*p)->set_targets({{"t0", "127.0.0.1", resp.r->tcp_port()}});
  std::vector<Target> many;
  for (int i = 0; i < 100; ++i) many.push_back({"t" + std::to_string(i), "127.0.0.1", resp.r->tcp_port()});
  Collected c;
  size_t at_growth = 0;  // probes resolved before the new list was handed over
  std::thread grow([&] {
    std::this_thread::sleep_for(300ms);
    {
      std::lock_guard lk(c.mu);
      at_growth = c.probes.size();
    }
    (*p)->set_targets(many);  // 100 targets x (300 ms / 10 ms + 2) x 2: the table grows past 1024
  });
  auto ctr = run_for(**p, 1500ms, c);
  grow.join();
  // Shares of what this run resolved, not counts: on 2 shared cores under load the prober sends
  // fewer probes in 1.5 s, the responder accepts 100 new connections late, and the prober reads a
  // reply together with its follow-up frame more often (one receive stamp per read: that answer's
  // time is user-space; under ASan at load 24 no answer after the growth had kernel times, so
  // the stamps are not judged here). What the growth must not break: t0's probes in flight
  // across it are still matched to their answers, nothing unknown or malformed.
  uint64_t t0_after = 0, t0_answered_after = 0;
  for (size_t i = at_growth; i < c.probes.size(); ++i) {
    const auto& r = c.probes[i];
    if (c.probe_targets[i] == "t0") {
      ++t0_after;
      t0_answered_after += r.answered ? 1 : 0;
    }
  }
  ASSERT_GT(t0_after, 0u);  // 7 of ~120 under ASan at load 20: the prober barely ran
  EXPECT_GT(t0_answered_after, t0_after / 2);
  EXPECT_EQ(ctr.malformed, 0u);
  EXPECT_EQ(ctr.unknown_probe, 0u);
}
