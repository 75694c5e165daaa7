#pragma once
// Which host or link is to blame: the latest mesh of one protocol turned into a short list of
// suspects, the way an operator reads a red heatmap (Pingmesh's triangulation).
//
//  - A pair is bad when its latest fresh window lost at least `loss_threshold` of its probes, or
//    when it is slow: its median RTT is at least `latency_factor` times, and `latency_margin_ns`
//    more than, its own usual RTT (PairWindow::baseline_rtt_ns) or the median of its group's pairs
//    (at least 4 of them). The first catches a link that got slower; the second one that was slow
//    from the start. Both are needed for a verdict of more than noise: a 40 us link at 90 us
//    is not bad, one at 2.1 ms is.
//  - A pair whose window began before one of its ends came back from being down measured the
//    outage, not the network: it is left out (a returning agent is not blamed again).
//  - A host is suspect when most of the pairs it takes part in are bad: at least `min_peers`
//    distinct peers measured, and at least half (and at least two) of its pairs bad in one
//    direction (to it: "in", from it: "out") or both ("both"). Its pairs in that direction are
//    then explained by it. Hosts are taken greedily, the one with most bad pairs first, each
//    round over the pairs not yet explained, so a healthy host next to bad ones is not blamed.
//  - Every bad pair that no suspect host explains is a suspect link (src -> dst, directional).
//  - With fewer than `min_peers` peers a host cannot be told from its links, so only links are
//    named. Windows older than `stale_windows` window lengths, and down agents, are left out
//    (down agents are listed apart).
// Pure: no locks, no I/O; the HTTP handler feeds it Mesh::latest() and the agent list.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "controller/mesh_state.hpp"

namespace weft::controller {

struct BlameOptions {
  double loss_threshold = 0.05;
  size_t min_peers = 3;
  int64_t stale_windows = 2;
  double latency_factor = 2.0;
  int64_t latency_margin_ns = 200'000;
};

// What find_blame knows beyond the windows: when agents came back after being down, and which
// group a pair is compared with for latency ("" for all pairs when not given).
struct BlameContext {
  std::map<std::string, int64_t, std::less<>> up_again_unix_ns;
  std::function<std::string(const PairWindow&)> group_of;
};

struct HostSuspect {
  std::string host;
  std::string direction;  // "in", "out" or "both"
  std::string reason;     // "loss", "latency" or "loss+latency" (what its bad pairs show)
  size_t bad_pairs = 0;   // bad pairs in the blamed direction(s), not explained by an earlier suspect
  size_t pairs = 0;       // all such pairs in the blamed direction(s)
  double loss_ratio = 0;  // lost / sent over its bad pairs
};

struct LinkSuspect {
  std::string src, dst;
  std::string reason;  // "loss", "latency" or "loss+latency"
  double loss_ratio = 0;
  int64_t rtt_ns = 0;       // its median RTT
  int64_t expected_ns = 0;  // what it was compared with when slow (its usual RTT or its group's)
};

struct Blame {
  size_t measured_pairs = 0;  // fresh pairs looked at
  size_t bad_pairs = 0;
  size_t slow_pairs = 0;           // of the bad pairs, those that are slow (some may be lossy too)
  std::vector<HostSuspect> hosts;  // worst first
  std::vector<LinkSuspect> links;  // worst first
};

// The context from the controller's own state: when agents came back, and each pair's group (the
// first group of `protocol` that holds both ends, by its member patterns; "" when none does).
BlameContext blame_context(proto::Protocol protocol, const std::vector<AgentInfo>& agents,
                           const std::vector<GroupInfo>& groups);

// `pairs`: the latest window per (src, dst) of one protocol; `down`: agents marked down.
Blame find_blame(const std::vector<PairWindow>& pairs, const std::vector<std::string>& down,
                 int64_t now_unix_ns, int64_t window_ns, const BlameOptions& opt = {},
                 const BlameContext& ctx = {});

}  // namespace weft::controller
