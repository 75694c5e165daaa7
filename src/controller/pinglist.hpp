#pragma once
// Pinglists: which targets one agent probes, per protocol, computed from the probe plan (groups =
// full meshes, arrows = A probes B) and the agents that are registered and up.
//
// A pinglist's version is a hash of its content, so it is the same for the same list across
// controller restarts and an agent that already has it gets a one-line "unchanged" answer.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/rdma_endpoint.hpp"
#include "controller/config.hpp"

namespace weft::controller {

// What the pinglist needs to know about one registered agent.
struct Peer {
  std::string name;
  std::string address;  // the address its responders listen on
  std::vector<probe::Protocol> protocols;
  uint16_t udp_port = 0;
  uint16_t tcp_port = 0;
  bool up = true;
  std::vector<agent::RdmaEndpoint> rdma{};  // its RDMA engines (rails); none: not an rdma target
};

struct PinglistTarget {
  std::string name;
  std::string host;
  uint16_t port = 0;
  // Protocol rdma: the peer's engine on this rail, probed by the agent's own engine of the same
  // index (rail i talks to rail i, as on multi-rail RDMA fabrics).
  uint32_t rail = 0;
  std::optional<agent::RdmaEndpoint> rdma{};
  bool operator==(const PinglistTarget&) const = default;
};

struct ProtocolPinglist {
  probe::Protocol protocol = probe::Protocol::udp;
  int64_t interval_ns = 0;
  int64_t timeout_ns = 0;
  std::vector<PinglistTarget> targets;  // sorted by name, no duplicates, never the agent itself
};

struct Pinglist {
  uint64_t version = 0;
  int64_t window_ns = 0;
  int64_t report_interval_ns = 0;
  int64_t sync_interval_ns = 0;
  std::vector<ProtocolPinglist> protocols;  // only protocols the agent has targets for... or can run

  size_t target_count() const {
    size_t n = 0;
    for (const auto& p : protocols) n += p.targets.size();
    return n;
  }
};

// `peers` holds every registered agent (also the one asking, and down ones: they are skipped).
// An agent that is not among the peers gets an empty pinglist.
// Protocol rdma: an agent with k RDMA engines probes, from its engine i < k, every wanted peer's
// engine i; the target of rail 0 is named after the peer, that of rail i > 0 "PEER:DEVICE" (so
// that each rail is its own pair in the mesh). Agents without engines neither probe nor are probed.
Pinglist compute_pinglist(const Config& cfg, const std::string& agent, const std::vector<Peer>& peers);

// {"version":..,"window_ms":..,"report_interval_ms":..,"sync_interval_ms":..,
//  "protocols":[{"protocol":"udp","interval_us":..,"timeout_us":..,"targets":[{"name","host","port"}]}]}
// rdma targets also carry "rail" and "rdma" (the peer's endpoint, rdma_endpoint.hpp).
std::string pinglist_json(const Pinglist& p);

}  // namespace weft::controller
