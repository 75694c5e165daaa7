#pragma once
// A window: what one prober saw of one target over one interval. This is the unit the agent
// reports to the controller (report.hpp encodes it), so it is plain data (no pointers, no
// histograms) and lives in src/proto, below both the probers that fill it and the controller.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "proto/protocol.hpp"

namespace weft::proto {

// Percentiles of one quantity, in nanoseconds. count == 0 means no samples (all fields 0).
struct LatencySummary {
  uint64_t count = 0;
  int64_t min_ns = 0;
  int64_t mean_ns = 0;
  int64_t p50_ns = 0;
  int64_t p90_ns = 0;
  int64_t p95_ns = 0;
  int64_t p99_ns = 0;
  int64_t p999_ns = 0;
  int64_t max_ns = 0;
  bool operator==(const LatencySummary&) const = default;
};

// The JSON names of the three summaries (report.cpp); kLegacyRttField is what 0.1 called
// rtt_incl_responder_delay, still written beside it for released controllers and still read.
inline constexpr const char* kRttInclResponderDelayField = "rtt_incl_responder_delay";
inline constexpr const char* kLegacyRttField = "rtt";
inline constexpr const char* kNetworkRttField = "network_rtt";
inline constexpr const char* kResponderDelayField = "responder_delay";

// One flow of a window: the prober spreads a target's probes round-robin over K source ports (K
// flows), so that ECMP hashes them onto different paths and a bad path among good ones shows as
// one bad flow instead of being diluted into the pair's average (docs/probe.md "Flows").
inline constexpr size_t kMaxFlowsPerWindow = 64;
struct FlowStats {
  uint16_t src_port = 0;  // the flow's local (source) port; the destination is target_address
  uint64_t sent = 0;      // as the window's counters, for this flow's probes only
  uint64_t received = 0;
  uint64_t lost = 0;
  int64_t network_rtt_p50_ns = 0;  // 0: no samples
  bool operator==(const FlowStats&) const = default;
};

struct WindowStats {
  Protocol protocol = Protocol::udp;
  std::string target;          // the target's name as given in the pinglist (or HOST:PORT)
  std::string target_address;  // the address actually probed, "IP:PORT"
  int64_t start_unix_ns = 0;   // wall-clock window bounds
  int64_t end_unix_ns = 0;
  uint64_t sent = 0;       // probes whose deadline fell in this window
  uint64_t received = 0;   // answered in time
  uint64_t lost = 0;       // no answer within the timeout
  uint64_t late = 0;       // answered after the timeout (also counted in lost)
  uint64_t duplicate = 0;  // second and later answers to one probe
  uint64_t malformed = 0;  // datagrams from this target that did not parse or matched no probe
  uint64_t weird = 0;      // responder delay larger than the measured RTT: counted, not averaged in
  TimestampSource timestamp_source = TimestampSource::user;
  // The three quantities of docs/probe.md "RTT fields". network_rtt is the network's round trip;
  // rtt_incl_responder_delay = network_rtt + responder_delay is what the prober saw end to end,
  // including however long the responder held the probe (its wake-up period, up to its
  // max_coalesce: 5 ms by default). Before 0.2 it was called rtt (still on the JSON wire, see
  // report.hpp).
  LatencySummary rtt_incl_responder_delay;  // prober send -> prober receive
  LatencySummary network_rtt;               // rtt_incl_responder_delay minus responder_delay
  LatencySummary responder_delay;           // responder receive -> responder send (processing + hold)
  // Per-flow counters beside the pair's (empty: the prober did not split the target into flows, or
  // an older agent). Only the report carries them (its "flows" section); the controller's history
  // records and stores keep the pair aggregate alone.
  std::vector<FlowStats> flows;
};

}  // namespace weft::proto
