#pragma once
// A traced path: the routers one probe flow crosses, as a Paris traceroute found them (TTL-limited
// probes with the flow's own 5-tuple, so ECMP hashes them as it hashes the flow's probes; the
// routers' ICMP time-exceeded answers name the hops). The agent reports them in its report's
// "paths" section (report.hpp); the controller keeps them per flow (controller/flows.hpp).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "proto/protocol.hpp"

namespace weft::proto {

inline constexpr size_t kMaxHops = 64;
inline constexpr size_t kMaxHopLength = 64;  // an IPv6 literal is at most 45 bytes
inline constexpr size_t kMaxPathsPerReport = 100'000;

struct PathTrace {
  Protocol protocol = Protocol::udp;
  std::string target;     // the target's name as in the window (pinglist name)
  uint16_t src_port = 0;  // the flow: its source port ...
  uint16_t dst_port = 0;  // ... and destination port
  int64_t traced_at_unix_ns = 0;
  bool reached = false;  // the last hop is the target itself (it answered); else max hops ran out
  // Hop i is the router at TTL i+1: the address that answered, "" where nothing did.
  std::vector<std::string> hops;
  bool operator==(const PathTrace&) const = default;
};

// Whether two traces of one flow found the same route: equal where both answered ("" matches any
// address: routers rate-limit their ICMP); different lengths only count when both reached the
// target, and silent hops right before a target's answer may be the target's own lost answer. The
// agent uses it to notice a path change (and trace that flow again soon), the controller to count
// changes and flapping (controller/flows.hpp).
bool same_route(std::span<const std::string> a_hops, bool a_reached, std::span<const std::string> b_hops,
                bool b_reached);

}  // namespace weft::proto
