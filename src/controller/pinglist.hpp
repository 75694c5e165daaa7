#pragma once
// Pinglists: which targets one agent probes, per protocol, computed from the probe plan (groups =
// full meshes, arrows = A probes B) and the agents that are registered and up.
//
// A pinglist's version is a hash of its content, so it is the same for the same list across
// controller restarts and an agent that already has it gets a one-line "unchanged" answer.
// The format itself is the protocol's: proto/pinglist.hpp.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "controller/config.hpp"
#include "proto/pinglist.hpp"

namespace weft::controller {

// What the pinglist needs to know about one registered agent.
struct Peer {
  std::string name;
  std::string address;  // the address its responders listen on
  std::vector<proto::Protocol> protocols;
  uint16_t udp_port = 0;
  uint16_t tcp_port = 0;
  bool up = true;
  std::vector<proto::RdmaEndpoint> rdma{};  // its RDMA engines (rails); none: not an rdma target
};

// `peers` holds every registered agent (also the one asking, and down ones: they are skipped).
// An agent that is not among the peers gets an empty pinglist.
// Protocol rdma: an agent with k RDMA engines probes, from its engine i < k, every wanted peer's
// engine i; the target of rail 0 is named after the peer, that of rail i > 0 "PEER:DEVICE" (so
// that each rail is its own pair in the mesh). Agents without engines neither probe nor are probed.
proto::Pinglist compute_pinglist(const Config& cfg, const std::string& agent, const std::vector<Peer>& peers);

}  // namespace weft::controller
