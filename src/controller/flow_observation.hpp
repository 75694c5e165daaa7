#pragma once
// One probe flow's latest window as fault localisation reads it. A flow is one 5-tuple (the agent
// probes each peer over several source ports so that ECMP spreads them over its paths); the
// controller builds these from ingested per-flow counters and traced paths (flows.hpp) and the
// localiser (localise.hpp) turns them, with the topology, into suspect network elements.
//
// A pair reported without per-flow detail (an older agent, or RDMA where the flow cannot be
// chosen) is one observation with src_port 0: its path is "any of the ECMP paths between the two
// hosts", which localisation must treat as a mixture, not as one known path.
#include <cstdint>
#include <string>
#include <vector>

#include "proto/protocol.hpp"

namespace weft::controller {

struct FlowObservation {
  proto::Protocol protocol = proto::Protocol::udp;
  std::string src;        // the probing agent's name (a host in the topology)
  std::string dst;        // the probed agent's name
  uint16_t src_port = 0;  // the flow's source port; 0: the pair as a whole, flow unknown
  uint16_t dst_port = 0;
  int64_t start_unix_ns = 0;  // the window's bounds
  int64_t end_unix_ns = 0;
  uint64_t sent = 0;
  uint64_t lost = 0;
  int64_t rtt_p50_ns = 0;              // network RTT median in the window; 0: no samples
  int64_t baseline_rtt_ns = 0;         // the flow's usual network RTT; 0: not known yet
  int64_t responder_delay_p50_ns = 0;  // the responder's own processing time (a host symptom)
  // The flow's learned path, hop by hop from src: the address of each router that answered the
  // TTL-limited probe ("" where no answer came). Empty: never traced (use the given topology).
  std::vector<std::string> hops;
  // The path it took before its latest change (same form; empty: none known). Where a flapping
  // flow's two paths differ is where the flapping element is.
  std::vector<std::string> other_hops;
  // The path it held for a while before (FlowState::home_hops; empty: none known). A link that
  // flaps moves its flows off their home path and back: of a flapping flow's two paths, the
  // flapping element is on the home one.
  std::vector<std::string> home_hops;
  // The path changed in most of the recent traces: the flow's path is not known, and a flapping
  // path is reported as such, never blamed as loss on any one element.
  bool path_flapping = false;
};

}  // namespace weft::controller
