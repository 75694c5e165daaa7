#pragma once
// The prober: sends UDP or TCP probes to many targets from one socket per protocol, address
// family and flow (ProberConfig::flows), matches the answers, and folds the results per target into windows
// (see window.hpp).
//
// Threading: one thread calls run(); set_targets(), stop() and counters() may be called from any
// other thread. Timing and accounting rules are described in docs/probe.md.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "probe/ip/coalesce_defaults.hpp"
#include "probe/window.hpp"
#include "proto/defaults.hpp"
#include "proto/path_trace.hpp"

namespace weft::probe {

struct Target {
  std::string name;  // how the target is reported (pinglist name, or HOST:PORT)
  std::string host;  // IPv4 or IPv6 literal
  uint16_t port = 0;
};

struct ProberConfig {
  Protocol protocol = Protocol::udp;  // udp or tcp (tcp: connect-handshake time per probe)
  bool tcp_keep_open = false;         // tcp: request/echo RTT on a kept-open connection
  // UDP: probe each target over this many flows (source ports: one socket each per address
  // family), a target's probes round-robin over them at the same per-target rate, so that ECMP
  // spreads them over its paths; windows then carry per-flow counters (WindowStats::flows).
  // 1 = one socket, no per-flow detail (as before; `weft ping`). At most proto::kMaxFlowsPerWindow.
  size_t flows = 1;
  std::string bind_address;  // "" = any; the source address to probe from
  std::chrono::nanoseconds interval{proto::defaults::kProbeInterval};  // per target
  std::chrono::nanoseconds timeout{proto::defaults::kProbeTimeout};
  std::chrono::nanoseconds window{proto::defaults::kWindow};
  // False: windows carry counts only, their latency summaries empty (`weft ping` without --window
  // keeps its own per-target summaries and reads only counts from windows: three histograms a
  // target fewer; issue 17, RSS).
  bool window_latency = true;
  size_t max_in_flight = 65536;
  uint64_t count = 0;  // probes per target, then that target stops sending; 0 = no limit
  // Sends due within this slack are batched into one sendmmsg (and may go out that much early).
  std::chrono::nanoseconds batch_slack{std::chrono::milliseconds(1)};
  // How long an answered UDP or kept-open TCP probe waits for the responder's follow-up (its
  // kernel TX timestamp) before the responder's user-space send time is used instead.
  std::chrono::nanoseconds followup_grace{std::chrono::milliseconds(20)};
  // UDP: ask responders to hand a reply's kernel send time to the next reply to this prober from
  // the same address instead of a follow-up datagram of its own (wire::replies_carry_followups_ok;
  // a third datagram per probe is most of what a mesh's follow-ups cost). The prober then waits up
  // to wire::kCarryHoldNs longer for follow-ups: results come later, their times are the same.
  // Off for `weft ping`, which prints each probe as it resolves.
  bool carried_followups = true;
  // Wake-up coalescing: after a wake-up the loop sleeps at least this long before it looks at
  // its sockets again, so a busy prober wakes at most 1/coalesce times a second whatever the
  // packet rate. Answers keep their kernel timestamps, so waiting changes no UDP or TCP-connect
  // measurement; it only delays reading them. (Kept-open TCP does not coalesce: a stream gives one
  // receive stamp per read, so an answer read together with a later frame would lose its own.)
  // 0 = react to every packet at once.
  // This is the shortest period, reached only under heavy load (more than 512 datagrams a
  // wake-up); otherwise the loop wakes every max_coalesce (wake_coalescer.hpp), and sends due
  // within the current period are batched with the others (see batch_slack).
  std::chrono::nanoseconds coalesce{kDefaultCoalesce};
  std::chrono::nanoseconds max_coalesce{kDefaultMaxCoalesce};
  // UDP Paris traceroute (docs/probe.md "Paths"): every flow of every target is traced about once
  // per trace_interval (0 = never), and at once (still rate-bounded) when it starts losing: TTL-limited
  // probes on the flow's own socket, so ECMP hashes them like its probes, the routers' ICMP
  // time-exceeded answers read from the socket's error queue. One hop in flight at a time; a trace
  // starts at most every trace_gap (routers rate-limit their ICMP: Linux answers one host about
  // once a second after a burst of 6); a hop unanswered for trace_hop_timeout is "".
  std::chrono::nanoseconds trace_interval{0};
  std::chrono::nanoseconds trace_gap{std::chrono::seconds(1)};
  std::chrono::nanoseconds trace_hop_timeout{std::chrono::milliseconds(300)};
  int trace_max_hops = 16;
  // A flow whose trace found a path other than its previous trace's is followed: traced again
  // every trace_follow_gap until its path has held for trace_follow_for (at most
  // kMaxFollowedFlows at once, the latest changes; at most 2 traces in 3 are follow-ups, so the
  // losing and due flows are still traced). One change shows a reroute; only traces a few seconds
  // apart show a path that goes back and forth (a flapping link): its flows lose only as they
  // leave it, and dozens of flows losing at once would otherwise space each flow's traces tens of
  // seconds apart.
  std::chrono::nanoseconds trace_follow_gap{std::chrono::seconds(2)};
  std::chrono::nanoseconds trace_follow_for{std::chrono::seconds(10)};
  static constexpr size_t kMaxFollowedFlows = 2;
};

struct ProberCounters {
  uint64_t sent = 0;
  uint64_t received = 0;
  uint64_t lost = 0;
  uint64_t late = 0;
  uint64_t duplicate = 0;
  uint64_t malformed = 0;
  uint64_t unknown_session = 0;
  uint64_t unknown_probe = 0;  // our session, but a sequence number never sent
  uint64_t evicted = 0;        // declared lost early because the in-flight table was full
  uint64_t send_errors = 0;
  // Probes that could not leave this host for want of a local resource (file descriptors, socket
  // buffers, the TCP connection cap): not counted in any window, since the network never saw them.
  uint64_t unsent = 0;
  uint64_t weird = 0;              // timestamps that did not add up (see compute_rtt)
  uint64_t wakeups = 0;            // event-loop wake-ups
  uint64_t streaming_wakeups = 0;  // ... of them with the UDP sockets read without epoll (a stream flowing)
  uint64_t traces = 0;             // path traces finished
  uint64_t trace_probes = 0;       // TTL-limited probes sent for them (in no window)
};

// One finished probe, for `weft ping`-style per-probe output. Times in nanoseconds.
struct ProbeResult {
  std::string_view target;
  uint64_t seq = 0;
  bool answered = false;  // false: lost (no answer within the timeout)
  bool weird = false;
  int64_t rtt_ns = 0;
  int64_t network_rtt_ns = 0;
  int64_t responder_delay_ns = 0;
  TimestampSource source = TimestampSource::user;
};

class Prober {
 public:
  static Result<std::unique_ptr<Prober>> create(const ProberConfig& config);
  ~Prober();
  Prober(const Prober&) = delete;
  Prober& operator=(const Prober&) = delete;

  // Thread-safe; takes effect at the next send slot. Targets are identified by (name, host, port):
  // ones that stay keep their schedule and open windows.
  void set_targets(std::vector<Target> targets);

  // Optional, set before run(): called from the run() thread for every finished probe.
  void set_on_probe(std::function<void(const ProbeResult&)> on_probe);
  // Optional, set before run(): called from the run() thread for every finished path trace.
  void set_on_path(std::function<void(proto::PathTrace&&)> on_path);

  // Runs until stop(); calls on_window (from the run() thread) for every finished window of every
  // target that sent at least one probe in it.
  Status run(std::function<void(WindowStats&&)> on_window);
  void stop();                      // thread-safe, run() returns within ~100 ms
  ProberCounters counters() const;  // thread-safe
  // Why the last probe counted in `unsent` could not be sent ("" if none); thread-safe.
  std::string last_local_error() const;

  struct Impl;

 private:
  explicit Prober(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::probe
