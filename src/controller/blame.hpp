#pragma once
// Which host or link is to blame: the latest mesh of one protocol turned into a short list of
// suspects, the way an operator reads a red heatmap (Pingmesh's triangulation).
//
//  - A pair is bad when its latest fresh window lost at least `loss_threshold` of its probes.
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
#include <string>
#include <vector>

#include "controller/mesh_state.hpp"

namespace weft::controller {

struct BlameOptions {
  double loss_threshold = 0.05;
  size_t min_peers = 3;
  int64_t stale_windows = 2;
};

struct HostSuspect {
  std::string host;
  std::string direction;  // "in", "out" or "both"
  size_t bad_pairs = 0;   // bad pairs in the blamed direction(s), not explained by an earlier suspect
  size_t pairs = 0;       // all such pairs in the blamed direction(s)
  double loss_ratio = 0;  // lost / sent over its bad pairs
};

struct LinkSuspect {
  std::string src, dst;
  double loss_ratio = 0;
};

struct Blame {
  size_t measured_pairs = 0;  // fresh pairs looked at
  size_t bad_pairs = 0;
  std::vector<HostSuspect> hosts;  // worst first
  std::vector<LinkSuspect> links;  // worst first
};

// `pairs`: the latest window per (src, dst) of one protocol; `down`: agents marked down.
Blame find_blame(const std::vector<PairWindow>& pairs, const std::vector<std::string>& down,
                 int64_t now_unix_ns, int64_t window_ns, const BlameOptions& opt = {});

}  // namespace weft::controller
