#pragma once
// The responder: answers UDP probes (with its kernel receive time, then a follow-up carrying its
// kernel send time) and accepts TCP connections (connect probes, and echo on kept-open ones, two-step
// like UDP for probers that read follow-up frames).
// One thread calls run(); stop() and counters() are thread-safe.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "base/result.hpp"
#include "probe/ip/coalesce_defaults.hpp"
#include "probe/wire.hpp"

namespace weft::probe {

struct ResponderConfig {
  std::string listen_address = "0.0.0.0";  // "::" listens on IPv6 and IPv4
  uint16_t udp_port = 7777;                // 0 = an ephemeral port (see udp_port())
  uint16_t tcp_port = 7778;                // 0 = an ephemeral port (see tcp_port())
  bool serve_udp = true;
  bool serve_tcp = true;
  // Open TCP connections at most; the responder also keeps to half of its descriptor limit, so a
  // flood of connections can never take the descriptors this host's own probes need. At the cap a
  // new connection replaces the longest-idle one if that has been idle 5 s, else it is closed.
  size_t max_tcp_connections = 4096;
  // Accept a TCP connection only once data comes on it (TCP_DEFER_ACCEPT). A connect probe, which
  // the prober resets as soon as the handshake is done, then costs this process nothing: the
  // kernel answers the SYN and drops the half-open entry on the reset; no accept, no epoll, no
  // close (issue 17: what lets a responder keep up with tens of thousands a second). Kept-open
  // probers send at once and are accepted with their first frame. A peer that connects and sends
  // nothing is accepted after the kernel's deferral (about 5 s) or dropped. Off: every
  // connection is accepted at once (and counted in tcp_accepted).
  bool defer_accept = true;
  // A connection that sends nothing for this long is closed (probers keep theirs busy).
  std::chrono::nanoseconds tcp_idle_timeout{std::chrono::seconds(60)};
  // Send each reply's kernel send time in a follow-up (UDP, and kept-open TCP to probers that read
  // them), so that the prober can take the responder's full processing time out of the RTT. Off:
  // the reply's user-space send time (read just before the send call) is all the prober gets; the
  // kernel's send path then counts as network.
  bool followups = true;
  // Wake-up coalescing (see ProberConfig::coalesce): the time a probe waits here is between its
  // kernel receive and send timestamps, so it is taken out of the network RTT like any other
  // responder delay. An idle responder still answers the first probe at once.
  // This is the shortest period, reached only under heavy load; otherwise a responder that is not
  // idle sleeps max_coalesce between wake-ups, which bounds how long it holds a probe: the hold in
  // every responder delay it reports (coalesce_defaults.hpp, docs/probe.md "RTT fields").
  std::chrono::nanoseconds coalesce{kDefaultCoalesce};
  std::chrono::nanoseconds max_coalesce{kDefaultMaxCoalesce};
  // UDP, to probers that read them (wire::replies_carry_followups_ok): how long a reply's send time
  // waits for the next reply to the same prober from the same address to carry it, on pairs
  // probed at least that often, before it goes in a follow-ups datagram of its own. 0: never held.
  // Probers wait this much longer for follow-ups (wire::kCarryHoldNs): keep it at most that.
  std::chrono::nanoseconds carry_hold{wire::kCarryHoldNs};
};

struct ResponderCounters {
  uint64_t answered = 0;      // UDP replies and TCP echoes sent
  uint64_t malformed = 0;     // datagrams / frames that did not parse
  uint64_t tcp_accepted = 0;  // connections accepted (with defer_accept: those that sent data)
  uint64_t tcp_refused = 0;   // closed at once: at the connection cap with none idle enough to replace
  uint64_t tcp_reaped = 0;    // closed for idleness (the idle timeout, or replaced at the cap)
  uint64_t followups = 0;     // follow-ups sent with the kernel TX timestamp (UDP entries, TCP frames)
  uint64_t carried = 0;       // ... of them carried by a later reply (UDP) instead of a datagram of their own
  uint64_t shed = 0;          // replies sent without a follow-up because the responder was behind
  uint64_t unstamped = 0;     // TCP replies whose send stamp never came in time: no follow-up sent
  uint64_t wakeups = 0;       // event-loop wake-ups
  uint64_t streaming_wakeups = 0;  // ... of them with the UDP socket read without epoll (a stream flowing)
};

class Responder {
 public:
  // Binds the sockets; errors name the address and port.
  static Result<std::unique_ptr<Responder>> create(const ResponderConfig& config);
  ~Responder();
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;

  Status run();
  void stop();
  ResponderCounters counters() const;
  uint16_t udp_port() const;  // the bound ports (useful when 0 was asked for an ephemeral port)
  uint16_t tcp_port() const;

  struct Impl;

 private:
  explicit Responder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::probe
