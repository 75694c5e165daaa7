#pragma once
// Shared by the prober tests: a real responder on a thread, running a prober for a while and
// collecting its windows and probes, and a scripted fake responder.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.hpp"
#include "net/address.hpp"
#include "net/socket.hpp"
#include "probe/ip/prober.hpp"
#include "probe/ip/responder.hpp"
#include "probe/wire.hpp"

namespace probe_test {

using namespace weft;
using namespace weft::probe;
using namespace std::chrono_literals;

// A real responder on its own thread, on ephemeral ports of `c.listen_address` (the config's ports
// are replaced by 0: read the bound ones from r).
struct RunningResponder {
  std::unique_ptr<Responder> r;
  std::thread th;
  explicit RunningResponder(ResponderConfig c) {
    c.udp_port = 0;
    c.tcp_port = 0;
    auto made = Responder::create(c);
    if (!made) throw std::runtime_error(made.error().message);
    r = std::move(*made);
    th = std::thread([this] { (void)r->run(); });
  }
  explicit RunningResponder(const char* listen = "127.0.0.1", bool followups = true)
      : RunningResponder(config(listen, followups)) {}
  ~RunningResponder() {
    r->stop();
    th.join();
  }

 private:
  static ResponderConfig config(const char* listen, bool followups) {
    ResponderConfig c;
    c.listen_address = listen;
    c.followups = followups;
    return c;
  }
};

struct Collected {
  std::mutex mu;
  std::map<std::string, WindowStats> totals;  // windows summed per target
  std::map<std::string, int> windows;
  std::map<std::string, std::map<uint16_t, FlowStats>> flows;  // per target, per source port, summed
  std::vector<ProbeResult> probes;
  std::vector<std::string> probe_targets;
};

// Runs the prober for `d`, then stops it; windows and probes are collected. With `until`: stops
// 100 ms after `until(counters)` first holds instead (at most `d`), so that a test waits for an
// amount of work, not for a time a loaded machine may not give it.
inline ProberCounters run_for(Prober& p, std::chrono::milliseconds d, Collected& c,
                              std::function<bool(const ProberCounters&)> until = {}) {
  p.set_on_probe([&](const ProbeResult& r) {
    std::lock_guard lk(c.mu);
    c.probes.push_back(r);
    c.probe_targets.emplace_back(r.target);
  });
  std::thread th([&] {
    auto st = p.run([&](WindowStats&& w) {
      std::lock_guard lk(c.mu);
      auto& t = c.totals[w.target];
      t.target = w.target;
      t.target_address = w.target_address;
      t.sent += w.sent;
      t.received += w.received;
      t.lost += w.lost;
      t.late += w.late;
      t.duplicate += w.duplicate;
      t.malformed += w.malformed;
      t.timestamp_source = w.timestamp_source;
      t.network_rtt = w.network_rtt;
      t.rtt_incl_responder_delay = w.rtt_incl_responder_delay;
      t.responder_delay = w.responder_delay;
      c.windows[w.target]++;
      for (const auto& f : w.flows) {
        auto& sum = c.flows[w.target][f.src_port];
        sum.src_port = f.src_port;
        sum.sent += f.sent;
        sum.received += f.received;
        sum.lost += f.lost;
        if (f.network_rtt_p50_ns) sum.network_rtt_p50_ns = f.network_rtt_p50_ns;
      }
      EXPECT_EQ(w.end_unix_ns - w.start_unix_ns, 200'000'000);
      EXPECT_EQ(w.start_unix_ns % 200'000'000, 0);
    });
    EXPECT_TRUE(st) << (st ? "" : st.error().message);
  });
  if (until) {
    const auto end = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < end && !until(p.counters())) std::this_thread::sleep_for(5ms);
    std::this_thread::sleep_for(100ms);
  } else {
    std::this_thread::sleep_for(d);
  }
  const auto t0 = std::chrono::steady_clock::now();
  p.stop();
  th.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0,
            500ms);  // stop() is prompt (~100 ms, plus a loaded machine)
  return p.counters();
}

inline ProberConfig fast_config(Protocol proto = Protocol::udp) {
  ProberConfig c;
  c.protocol = proto;
  c.interval = 10ms;
  c.timeout = 300ms;  // generous: these tests also run under ASan on a busy 2-core machine
  c.window = 200ms;
  return c;
}

// A UDP socket that swallows everything: a target that never answers.
inline Fd black_hole(uint16_t& port) {
  auto fd = net::udp_socket(*net::SocketAddress::parse_ip("127.0.0.1", 0));
  port = net::local_address(fd->get())->port();
  return std::move(*fd);
}

// A scripted responder for the prober's tests: a thread on a loopback UDP port that hands every probe
// it receives to `on_probe` (already turned into a reply: type reply, no flags, user-space responder
// times) and sends what the script held back once it is due (by default the held reply as it is;
// `on_due` replaces that). `after_release(nothing_held)` runs after each pass over the held
// replies. The callbacks run on the fake's thread, which is also the only caller of send()/hold().
class FakeResponder {
 public:
  using OnProbe = std::function<void(FakeResponder&, wire::Packet& reply, const net::SocketAddress& from)>;
  using OnDue = std::function<void(FakeResponder&, wire::Packet& held, const net::SocketAddress& to)>;
  using AfterRelease = std::function<void(FakeResponder&, bool nothing_held)>;

  explicit FakeResponder(OnProbe on_probe, int poll_ms = 2, OnDue on_due = {},
                         AfterRelease after_release = {})
      : on_probe_(std::move(on_probe)), on_due_(std::move(on_due)), after_release_(std::move(after_release)) {
    auto fd = net::udp_socket(*net::SocketAddress::parse_ip("127.0.0.1", 0));
    if (!fd) throw std::runtime_error(fd.error().message);
    fd_ = std::move(*fd);
    port_ = net::local_address(fd_.get())->port();
    th_ = std::thread([this, poll_ms] { loop(poll_ms); });
  }
  ~FakeResponder() { stop(); }
  FakeResponder(const FakeResponder&) = delete;
  FakeResponder& operator=(const FakeResponder&) = delete;

  uint16_t port() const { return port_; }
  void stop() {
    done_ = true;
    if (th_.joinable()) th_.join();
  }

  void send(const wire::Packet& p, const net::SocketAddress& to) {
    uint8_t out[wire::kSize];
    wire::encode(p, out);
    send_bytes(out, sizeof out, to);
  }
  void send_bytes(const uint8_t* b, size_t n, const net::SocketAddress& to) {
    sendto(fd_.get(), b, n, 0, to.sa(), to.length);
  }
  // Hands `p` back to the script (on_due) or sends it, `delay_ns` from now (monotonic clock).
  void hold(const wire::Packet& p, const net::SocketAddress& to, int64_t delay_ns) {
    held_.push_back({p, to, mono_ns() + delay_ns});
  }

 private:
  struct Held {
    wire::Packet p;
    net::SocketAddress to;
    int64_t due_mono;
  };

  void loop(int poll_ms) {
    while (!done_) {
      pollfd pfd{fd_.get(), POLLIN, 0};
      poll(&pfd, 1, poll_ms);
      const int64_t now = mono_ns();
      for (auto it = held_.begin(); it != held_.end();) {
        if (it->due_mono > now) {
          ++it;
          continue;
        }
        if (on_due_) {
          on_due_(*this, it->p, it->to);
        } else {
          send(it->p, it->to);
        }
        it = held_.erase(it);
      }
      if (after_release_) after_release_(*this, held_.empty());
      wire::Packet p;
      net::SocketAddress from;
      if (!recv_probe(p, from)) continue;
      p.type = wire::Type::reply;
      p.flags = 0;  // no follow-up coming: user-space times
      p.responder_rx_ns = realtime_ns();
      p.responder_tx_ns = p.responder_rx_ns + 1;
      on_probe_(*this, p, from);
    }
  }

  // One waiting datagram that parses as a wire packet, and who sent it.
  bool recv_probe(wire::Packet& p, net::SocketAddress& from) {
    uint8_t buf[128];
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    const ssize_t n =
        recvfrom(fd_.get(), buf, sizeof buf, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&addr), &len);
    if (n <= 0 ||
        wire::decode(std::span<const uint8_t>(buf, static_cast<size_t>(n)), p) != wire::ParseError::ok)
      return false;
    from = net::SocketAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&addr), len);
    return true;
  }

  OnProbe on_probe_;
  OnDue on_due_;
  AfterRelease after_release_;
  Fd fd_;
  uint16_t port_ = 0;
  std::atomic<bool> done_{false};
  std::vector<Held> held_;
  std::thread th_;
};

}  // namespace probe_test
