// The prober and responder together on loopback (no root needed): answers, loss, garbage,
// duplicates, late answers, unknown sessions, TCP, IPv6 and the bounded in-flight table.
#include "probe/ip/prober.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
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
using namespace probe_test;

TEST(Prober, AnswersAndLossPerTarget) {
  RunningResponder resp;
  uint16_t dead_port = 0;
  auto hole = black_hole(dead_port);
  auto p = Prober::create(fast_config());
  ASSERT_TRUE(p) << p.error().message;
  (*p)->set_targets({{"alive", "127.0.0.1", resp.r->udp_port()}, {"dead", "127.0.0.1", dead_port}});
  Collected c;
  auto ctr = run_for(**p, 1500ms, c);
  auto& alive = c.totals["alive"];
  auto& dead = c.totals["dead"];
  EXPECT_GT(alive.sent, 50u);
  EXPECT_GE(alive.received * 50, alive.sent * 49);  // no loss on loopback (2% for a stalled machine)
  EXPECT_EQ(alive.received + alive.lost, alive.sent);
  EXPECT_EQ(alive.target_address, "127.0.0.1:" + std::to_string(resp.r->udp_port()));
  EXPECT_EQ(alive.timestamp_source, TimestampSource::kernel);
  EXPECT_GT(alive.rtt_incl_responder_delay.count, 0u);
  EXPECT_GT(alive.network_rtt.p50_ns, 0);
  EXPECT_LE(alive.network_rtt.p50_ns, alive.rtt_incl_responder_delay.p50_ns);
  EXPECT_GT(alive.responder_delay.p50_ns, 0);
  EXPECT_GT(dead.sent, 50u);
  EXPECT_EQ(dead.received, 0u);
  EXPECT_EQ(dead.lost, dead.sent);
  EXPECT_GE(c.windows["alive"], 5);
  EXPECT_EQ(ctr.duplicate, 0u);
  EXPECT_EQ(ctr.malformed, 0u);
  EXPECT_EQ(ctr.evicted, 0u);
  EXPECT_GE(ctr.sent, ctr.received + ctr.lost);
  EXPECT_GT(resp.r->counters().answered, 50u);
  EXPECT_GT(resp.r->counters().followups, 50u);
  // Probe results agree with the windows' sums.
  std::lock_guard lk(c.mu);
  size_t alive_ok = 0;
  for (size_t i = 0; i < c.probes.size(); ++i)
    if (c.probe_targets[i] == "alive" && c.probes[i].answered) ++alive_ok;
  EXPECT_GE(alive_ok, alive.received);
}

TEST(Prober, RespondersSurviveGarbageAndKeepAnswering) {
  RunningResponder resp;
  auto p = Prober::create(fast_config());
  ASSERT_TRUE(p);
  (*p)->set_targets({{"r", "127.0.0.1", resp.r->udp_port()}});
  std::atomic<bool> done{false};
  std::thread spray([&] {
    auto fd = net::udp_socket(*net::SocketAddress::parse_ip("127.0.0.1", 0));
    auto to = net::SocketAddress::parse_ip("127.0.0.1", resp.r->udp_port());
    std::mt19937 rng(1);
    uint8_t buf[200];
    for (int i = 0; i < 5000 && !done; ++i) {
      size_t n = rng() % sizeof buf;
      for (size_t j = 0; j < n; ++j) buf[j] = static_cast<uint8_t>(rng());
      if (i % 3 == 0 && n >= 4) std::memcpy(buf, "WFPB", 4);  // pass the magic, fail later
      sendto(fd->get(), buf, n, 0, to->sa(), to->length);
      if (i % 100 == 0) std::this_thread::sleep_for(1ms);
    }
  });
  Collected c;
  run_for(**p, 1000ms, c);
  done = true;
  spray.join();
  EXPECT_GT(resp.r->counters().malformed, 1000u);
  // Shares of what was sent, not counts: on 2 loaded cores the prober sent only 16 in this second
  // (the 30 once asked for failed). At most 2 % lost, and one loss is allowed below 50 sent.
  const auto& r = c.totals["r"];
  ASSERT_GT(r.sent, 10u);
  EXPECT_LE(r.lost, std::max<uint64_t>(1, r.sent / 50));
}

// A fake responder that misbehaves on purpose: duplicates, wrong sessions, unknown sequence
// numbers, garbage, and answers after the timeout.
TEST(Prober, CountsDuplicatesLateUnknownAndMalformedApart) {
  std::atomic<int> probes_seen{0};
  FakeResponder fake(
      [&](FakeResponder& f, wire::Packet& p, const net::SocketAddress& to) {
        switch (probes_seen++ % 5) {
          case 0:  // a duplicate
            f.send(p, to);
            f.send(p, to);
            break;
          case 1:  // after the 100 ms timeout
            f.hold(p, to, 150'000'000);
            break;
          case 2: {  // wrong session, then good
            auto q = p;
            q.session ^= 1;
            f.send(q, to);
            f.send(p, to);
            break;
          }
          case 3: {  // never sent, then good
            auto q = p;
            q.seq += 1'000'000;
            f.send(q, to);
            f.send(p, to);
            break;
          }
          case 4: {  // garbage, then good
            const uint8_t junk[wire::kSize] = {1, 2, 3};
            f.send_bytes(junk, sizeof junk, to);
            f.send(p, to);
            break;
          }
        }
      },
      5);
  const uint16_t port = fake.port();
  auto cfg = fast_config();
  cfg.interval = 20ms;
  cfg.timeout = 100ms;  // the fake answers every fifth probe 150 ms late
  auto p = Prober::create(cfg);
  ASSERT_TRUE(p);
  (*p)->set_targets({{"fake", "127.0.0.1", port}});
  Collected c;
  auto ctr = run_for(**p, 1500ms, c);
  fake.stop();
  const int n = probes_seen.load();
  ASSERT_GT(n, 40);
  auto& w = c.totals["fake"];
  EXPECT_GT(ctr.duplicate, 5u);
  EXPECT_GT(ctr.late, 5u);
  EXPECT_GT(ctr.unknown_session, 5u);
  EXPECT_GT(ctr.unknown_probe, 5u);
  EXPECT_GT(ctr.malformed, 5u);
  // Every fifth probe is answered late: it is lost (and late), never received.
  EXPECT_NEAR(static_cast<double>(w.lost) / static_cast<double>(w.sent), 0.2, 0.08);
  EXPECT_EQ(w.received + w.lost, w.sent);
  EXPECT_GT(w.duplicate, 0u);
  EXPECT_GT(w.late, 0u);
  EXPECT_GT(w.malformed, 0u);
  EXPECT_EQ(w.timestamp_source, TimestampSource::user);  // the fake sends no kernel times
}

// Issue 14: a late answer is counted in the window that counted its probe as lost, never in a later
// one (per window late is part of lost, and the controller refuses a window with late > lost). The
// fake answers at once, except the probes it gets 60-90 ms into one 200 ms window: those it answers
// 150 ms later, 50 ms past their deadline, which falls in that window's last 40 ms, so the answers
// arrive in the next window. Counted at arrival (before the fix), that next window had late answers
// and no loss of its own.
TEST(Prober, ALateAnswerCountsInItsLossWindowNeverALaterOne) {
  constexpr int64_t kWindow = 200'000'000;
  std::atomic<int> held_total{0};
  const int64_t start = realtime_ns();
  // The probes the fake reads 60-90 ms into a window are held 150 ms: past the 100 ms timeout, their
  // answers come in the next window. That is done in one window only: the first, from 300 ms after
  // the start, in which the fake read a probe in that phase (a starved machine may give the fake or
  // the prober no turn in those 30 ms of a window: that window is skipped, the next one is tried).
  const int64_t first_window = (start + 300'000'000) / kWindow + 1;
  std::atomic<int64_t> held_window{-1};
  FakeResponder fake([&](FakeResponder& f, wire::Packet& p, const net::SocketAddress& to) {
    const int64_t rt = p.responder_rx_ns;
    const int64_t w = rt / kWindow, phase = rt % kWindow;
    int64_t expected = -1;
    if (w >= first_window && phase >= 60'000'000 && phase < 90'000'000 &&
        (held_window.compare_exchange_strong(expected, w) || expected == w)) {
      f.hold(p, to, 150'000'000);
      held_total++;
    } else {
      f.send(p, to);
    }
  });
  const uint16_t port = fake.port();
  auto cfg = fast_config();
  cfg.interval = 5ms;
  cfg.timeout = 100ms;
  cfg.window = std::chrono::nanoseconds(kWindow);
  auto p = Prober::create(cfg);
  ASSERT_TRUE(p);
  (*p)->set_targets({{"fake", "127.0.0.1", port}});
  std::mutex mu;
  std::vector<WindowStats> windows;
  std::thread runner([&] {
    auto st = (*p)->run([&](WindowStats&& w) {
      std::lock_guard lk(mu);
      windows.push_back(std::move(w));
    });
    EXPECT_TRUE(st);
  });
  // Until two windows after the held one have ended and every held answer came back late (each
  // one is: 150 ms > the timeout), or 15 windows on (bounded).
  const int64_t give_up = (first_window + 15) * kWindow;
  for (int64_t now = realtime_ns(); now < give_up; now = realtime_ns()) {
    const int64_t hw = held_window.load();
    if (hw >= 0 && now >= (hw + 3) * kWindow &&
        (*p)->counters().late >= static_cast<uint64_t>(held_total.load()))
      break;
    std::this_thread::sleep_for(10ms);
  }
  (*p)->stop();
  runner.join();
  fake.stop();
  ASSERT_GT(held_total.load(), 0) << "the fake held no probe in 15 windows: the test proves nothing";
  std::cout << "held " << held_total.load() << " probes in window " << held_window.load() - first_window
            << " from the first tried\n";
  EXPECT_GE((*p)->counters().late, static_cast<uint64_t>(held_total.load()));
  std::lock_guard lk(mu);
  for (const auto& w : windows)
    EXPECT_LE(w.late, w.lost) << "window starting " << w.start_unix_ns << ": late " << w.late << ", lost "
                              << w.lost;
}

TEST(Prober, TcpConnectAndKeepOpen) {
  RunningResponder resp;
  uint16_t closed_port = 0;
  {
    auto l = net::tcp_listener(*net::SocketAddress::parse_ip("127.0.0.1", 0), 1);
    closed_port = net::local_address(l->get())->port();
  }  // closed again: connects are refused
  for (bool keep_open : {false, true}) {
    auto cfg = fast_config(Protocol::tcp);
    cfg.tcp_keep_open = keep_open;
    auto p = Prober::create(cfg);
    ASSERT_TRUE(p);
    (*p)->set_targets({{"up", "127.0.0.1", resp.r->tcp_port()}, {"down", "127.0.0.1", closed_port}});
    Collected c;
    run_for(**p, 1300ms, c);
    EXPECT_GT(c.totals["up"].received, 40u) << keep_open;
    EXPECT_LE(c.totals["up"].lost * 50, c.totals["up"].sent) << keep_open;
    EXPECT_EQ(c.totals["down"].received, 0u) << keep_open;
    EXPECT_GT(c.totals["down"].lost, 20u) << keep_open;
    if (!keep_open) {
      EXPECT_EQ(c.totals["up"].timestamp_source, TimestampSource::kernel);
    } else {
      EXPECT_GT(c.totals["up"].responder_delay.count, 0u);
    }
    // Connect probes never reach the responder process (TCP_DEFER_ACCEPT: reset before any data);
    // the kept-open connection is accepted with its first frame.
    if (!keep_open)
      EXPECT_EQ(resp.r->counters().tcp_accepted, 0u);
    else
      EXPECT_GE(resp.r->counters().tcp_accepted, 1u);
  }
}

TEST(Prober, IPv6) {
  std::unique_ptr<RunningResponder> resp;
  try {
    resp = std::make_unique<RunningResponder>("::1");
  } catch (const std::exception& e) {
    GTEST_SKIP() << "no IPv6 loopback: " << e.what();
  }
  auto p = Prober::create(fast_config());
  ASSERT_TRUE(p);
  (*p)->set_targets({{"v6", "::1", resp->r->udp_port()}});
  Collected c;
  run_for(**p, 1200ms, c);
  EXPECT_GT(c.totals["v6"].received, 30u);
  EXPECT_LE(c.totals["v6"].lost * 50, c.totals["v6"].sent);
  EXPECT_EQ(c.totals["v6"].target_address, "[::1]:" + std::to_string(resp->r->udp_port()));
}

TEST(Prober, DualStackResponderAnswersIPv4FromTheAddressAsked) {
  std::unique_ptr<RunningResponder> resp;
  try {
    resp = std::make_unique<RunningResponder>("::");
  } catch (const std::exception& e) {
    GTEST_SKIP() << "no IPv6: " << e.what();
  }
  auto p = Prober::create(fast_config());
  ASSERT_TRUE(p);
  (*p)->set_targets({{"v4", "127.0.0.1", resp->r->udp_port()}, {"v6", "::1", resp->r->udp_port()}});
  Collected c;
  run_for(**p, 1200ms, c);
  EXPECT_GT(c.totals["v4"].received, 30u);
  EXPECT_GT(c.totals["v6"].received, 30u);
  EXPECT_LE((c.totals["v4"].lost + c.totals["v6"].lost) * 50, c.totals["v4"].sent + c.totals["v6"].sent);
}

TEST(Prober, InFlightTableIsBoundedAndEvictsAsLost) {
  uint16_t dead_port = 0;
  auto hole = black_hole(dead_port);
  ProberConfig cfg;
  cfg.interval = 200us;  // 5,000 probes/s with a 1 s timeout: 5,000 in flight
  cfg.timeout = 1s;
  cfg.window = 200ms;
  cfg.max_in_flight = 1024;
  auto p = Prober::create(cfg);
  ASSERT_TRUE(p);
  (*p)->set_targets({{"dead", "127.0.0.1", dead_port}});
  Collected c;
  auto ctr = run_for(**p, 800ms, c);
  EXPECT_GT(ctr.sent, 2000u);
  EXPECT_GT(ctr.evicted, 500u);
  EXPECT_EQ(ctr.received, 0u);
  EXPECT_GE(ctr.lost, ctr.evicted);
}

TEST(Prober, SetTargetsAddsAndRetires) {
  RunningResponder resp;
  auto p = Prober::create(fast_config());
  ASSERT_TRUE(p);
  (*p)->set_targets({{"a", "127.0.0.1", resp.r->udp_port()}, {"bad", "not-an-ip", 1}});
  Collected c;
  std::thread later([&] {
    std::this_thread::sleep_for(500ms);
    (*p)->set_targets({{"b", "127.0.0.1", resp.r->udp_port()}});
  });
  run_for(**p, 1500ms, c);
  later.join();
  std::lock_guard lk(c.mu);
  EXPECT_GT(c.totals["a"].received, 20u);
  EXPECT_GT(c.totals["b"].received, 20u);
  EXPECT_EQ(c.totals.count("bad"), 0u);
  // "a" stopped being probed: every result for it came before "b" started plus one timeout.
  size_t a_after = 0, seen_b = 0;
  for (auto& t : c.probe_targets) {
    if (t == "b") ++seen_b;
    if (t == "a" && seen_b > 20) ++a_after;
  }
  EXPECT_EQ(a_after, 0u);
}

TEST(Prober, CountStopsEachTarget) {
  RunningResponder resp;
  auto cfg = fast_config();
  cfg.count = 7;
  auto p = Prober::create(cfg);
  ASSERT_TRUE(p);
  (*p)->set_targets({{"a", "127.0.0.1", resp.r->udp_port()}});
  Collected c;
  // Until 7 answers, then 100 ms (10 more intervals) in which an 8th probe would have gone out;
  // a fixed 500 ms saw only 4 sent under ASan at load 22.
  auto ctr = run_for(**p, 10s, c, [](const ProberCounters& k) { return k.received >= 7; });
  EXPECT_EQ(ctr.sent, 7u);
  EXPECT_EQ(ctr.received, 7u);
}

TEST(Prober, BadConfigAndBindErrorsAreReported) {
  ProberConfig cfg;
  cfg.interval = 0s;
  EXPECT_FALSE(Prober::create(cfg));
  cfg = {};
  cfg.bind_address = "nonsense";
  auto p = Prober::create(cfg);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("nonsense"), std::string::npos);
  ResponderConfig rc;
  rc.listen_address = "127.0.0.1";
  rc.udp_port = 0;
  rc.tcp_port = 0;
  auto r1 = Responder::create(rc);
  ASSERT_TRUE(r1);
  rc.udp_port = (*r1)->udp_port();
  auto r2 = Responder::create(rc);  // same UDP port: in use
  ASSERT_FALSE(r2);
  EXPECT_NE(r2.error().message.find("127.0.0.1:" + std::to_string(rc.udp_port)), std::string::npos);
}

// A responder that batches its follow-ups (wire type 4, as the real one does per wake-up): every
// probe is answered 2.5 ms after it came, the follow-ups say the responder held it exactly 2 ms,
// three to a message. The prober must take the responder delay from those messages (2 ms, not
// the 2.5 ms+ the replies' user-space times would give), count a repeated message's entries as
// duplicates, and drop malformed messages and ones naming probes it never sent.
TEST(Prober, BatchedFollowupsGiveTheResponderDelay) {
  std::atomic<int> messages{0};
  // State of the fake's thread only.
  net::SocketAddress to;
  wire::Followups batch;
  batch.count = 0;
  int sent_batches = 0;
  auto flush = [&](FakeResponder& f) {
    if (batch.count == 0) return;
    uint8_t out[wire::kMaxFollowupsSize];
    const size_t n = wire::encode_followups(batch, out);
    f.send_bytes(out, n, to);
    const int k = sent_batches++;
    if (k % 7 == 3) f.send_bytes(out, n, to);      // the same message twice: duplicates
    if (k % 7 == 5) f.send_bytes(out, n - 1, to);  // cut short: malformed
    if (k % 7 == 6) {                              // an entry for a probe never sent
      wire::Followups bad = batch;
      bad.entries[0].seq += 1'000'000;
      f.send_bytes(out, wire::encode_followups(bad, out), to);
    }
    messages++;
    batch.count = 0;
  };
  FakeResponder fake(
      [&](FakeResponder& f, wire::Packet& p, const net::SocketAddress& from) {
        to = from;
        f.hold(p, from, 2'500'000);
      },
      1,
      [&](FakeResponder& f, wire::Packet& r, const net::SocketAddress& dest) {
        r.flags = wire::kFollowupComing;
        r.responder_tx_ns = realtime_ns();
        f.send(r, dest);
        batch.flags = wire::kTxKernel;
        batch.session = r.session;
        batch.entries[batch.count++] = {r.seq, r.responder_rx_ns, r.responder_rx_ns + 2'000'000};
        if (batch.count == 3) flush(f);
      },
      [&](FakeResponder& f, bool nothing_held) {
        if (nothing_held) flush(f);
      });
  const uint16_t port = fake.port();
  auto cfg = fast_config();
  cfg.interval = 5ms;
  auto p = Prober::create(cfg);
  ASSERT_TRUE(p);
  (*p)->set_targets({{"batched", "127.0.0.1", port}});
  Collected c;
  auto ctr = run_for(**p, 1500ms, c);
  fake.stop();
  ASSERT_GT(messages.load(), 20);
  auto& w = c.totals["batched"];
  EXPECT_GT(w.received, 100u);
  EXPECT_EQ(w.received + w.lost, w.sent);
  ASSERT_GT(w.responder_delay.count, 0u);
  // The follow-ups' 2 ms, within the histogram's 1%; the replies alone would say >= 2.5 ms.
  EXPECT_NEAR(static_cast<double>(w.responder_delay.p50_ns), 2e6, 2e4);
  EXPECT_NEAR(static_cast<double>(w.responder_delay.max_ns), 2e6, 2e4);
  EXPECT_GT(ctr.duplicate, 0u);
  EXPECT_GT(ctr.malformed, 0u);
  EXPECT_GT(ctr.unknown_probe, 0u);
  EXPECT_EQ(ctr.weird, 0u);
}

// 10,000 probes/s (20 targets every 2 ms): a stream. Prober and responder take their UDP sockets
// out of epoll and read them on every wake-up; nothing may be lost or mis-timed by that.
TEST(Prober, AStreamIsReadWithoutEpollAndLosesNothing) {
  RunningResponder resp;
  auto cfg = fast_config();
  cfg.interval = 2ms;
  auto p = Prober::create(cfg);
  ASSERT_TRUE(p);
  std::vector<Target> targets;
  for (int i = 0; i < 20; ++i) targets.push_back({"t" + std::to_string(i), "127.0.0.1", resp.r->udp_port()});
  (*p)->set_targets(targets);
  Collected c;
  auto ctr = run_for(**p, 1500ms, c);
  const auto rc = resp.r->counters();
  EXPECT_GT(ctr.streaming_wakeups, 0u) << ctr.wakeups << " wake-ups";
  EXPECT_GT(rc.streaming_wakeups, 0u) << rc.wakeups << " wake-ups";
  EXPECT_GT(ctr.sent, 5000u);
  EXPECT_GE(ctr.received * 50, (ctr.received + ctr.lost) * 49);  // no loss (2% for a stalled machine)
  EXPECT_EQ(ctr.malformed + ctr.unknown_probe + ctr.duplicate + ctr.weird, 0u);
  EXPECT_GT(rc.followups, ctr.received / 2);  // the responder delays came from kernel stamps
  for (const auto& [name, w] : c.totals) {
    EXPECT_EQ(w.timestamp_source, TimestampSource::kernel) << name;
    EXPECT_LE(w.network_rtt.p50_ns, w.rtt_incl_responder_delay.p50_ns) << name;
  }
}

// Issue 17: a streaming prober wakes once per coalescing period (5 ms), as the kernel floor does,
// not also for each next send, expiry or grace deadline that falls inside the period: those wait
// for the period's end. Woken for each next send, 100 targets at 1,000 probes/s made 1.4 wake-ups a
// period. A loaded machine only makes wake-ups rarer (later), so the bound cannot flake that way.
TEST(Prober, AStreamingProberWakesOncePerPeriod) {
  RunningResponder resp;
  auto cfg = fast_config();
  cfg.interval = 100ms;  // 100 targets: 1,000 probes/s
  auto p = Prober::create(cfg);
  ASSERT_TRUE(p);
  std::vector<Target> targets;
  for (int i = 0; i < 100; ++i) targets.push_back({"t" + std::to_string(i), "127.0.0.1", resp.r->udp_port()});
  (*p)->set_targets(targets);
  Collected c;
  const int64_t t0 = mono_ns();
  auto ctr = run_for(**p, 2000ms, c);
  const int64_t periods = (mono_ns() - t0) / std::chrono::nanoseconds(cfg.max_coalesce).count();
  EXPECT_GT(ctr.streaming_wakeups, 0u);
  EXPECT_GT(ctr.sent, 1000u);
  EXPECT_GE(ctr.received * 50, (ctr.received + ctr.lost) * 49);  // no loss (2% for a stalled machine)
  // Besides one a period: window closes (200 ms here), the first answers before the stream is
  // seen, stop().
  EXPECT_LE(static_cast<int64_t>(ctr.wakeups), periods * 11 / 10 + 30)
      << ctr.streaming_wakeups << " streaming, " << periods << " periods";
}

// Issue 17: a prober asks for follow-ups carried by later replies (its session says so); on a
// pair probed every 10 ms the responder's send times then ride on the replies, the responder
// delay stays kernel-to-kernel, and nothing is lost or counted twice. `weft ping` turns it off.
TEST(Prober, RepliesCarryTheFollowupsOfABusyPair) {
  for (const bool carry : {true, false}) {
    RunningResponder resp;
    auto cfg = fast_config();
    cfg.carried_followups = carry;
    auto p = Prober::create(cfg);
    ASSERT_TRUE(p);
    (*p)->set_targets({{"busy", "127.0.0.1", resp.r->udp_port()}});
    Collected c;
    auto ctr = run_for(**p, 1500ms, c);
    const auto rc = resp.r->counters();
    auto& w = c.totals["busy"];
    EXPECT_GT(w.sent, 50u) << carry;
    EXPECT_GE(w.received * 50, w.sent * 49) << carry;
    EXPECT_EQ(w.timestamp_source, TimestampSource::kernel) << carry;
    EXPECT_EQ(ctr.malformed + ctr.unknown_probe + ctr.unknown_session + ctr.duplicate + ctr.weird, 0u)
        << carry;
    EXPECT_LE(w.network_rtt.p50_ns, w.rtt_incl_responder_delay.p50_ns) << carry;
    EXPECT_GT(w.responder_delay.count, 0u) << carry;  // (the last window's)
    if (carry) {
      EXPECT_GT(rc.carried, rc.followups / 2);
    } else {
      EXPECT_EQ(rc.carried, 0u);
      EXPECT_GT(rc.followups, 50u);
    }
  }
}

// Issue 14, defect 3: an agent out of file descriptors reported 100% loss to every TCP target and
// was blamed as the faulty host. A probe that cannot leave this host is not the network's loss:
// it is counted apart (unsent, with the reason) and in no window.
TEST(Prober, ProbesThisHostCannotSendAreNotCountedAsLoss) {
#if defined(__SANITIZE_ADDRESS__)
  // The sanitizers' runtime opens a pipe to check memory (UBSan's vptr check): with no descriptor
  // left it reports a false "invalid vptr" inside std::thread. The release build runs this test.
  GTEST_SKIP() << "needs descriptors the sanitizer runtime takes";
#endif
  for (bool keep_open : {false, true}) {
    auto cfg = fast_config(Protocol::tcp);
    cfg.tcp_keep_open = keep_open;
    auto p = Prober::create(cfg);
    ASSERT_TRUE(p);
    (*p)->set_targets({{"t", "127.0.0.1", 9}});
    // From here on no descriptor can be made: the lowest free number becomes the limit.
    rlimit old{};
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
    const int lowest_free = dup(0);
    ASSERT_GE(lowest_free, 0);
    close(lowest_free);
    rlimit low = old;
    low.rlim_cur = static_cast<rlim_t>(lowest_free);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
    Collected c;
    auto ctr = run_for(**p, 800ms, c);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
    EXPECT_GT(ctr.unsent, 20u) << keep_open;
    EXPECT_EQ(c.totals["t"].lost, 0u) << keep_open;
    EXPECT_EQ(c.totals["t"].sent, 0u) << keep_open;
    EXPECT_NE((*p)->last_local_error().find("Too many open files"), std::string::npos)
        << keep_open << ": " << (*p)->last_local_error();
  }
}
