#pragma once
// A simulated leaf-spine Clos for fault localisation (docs/localisation.md "Simulator"): it builds
// the topology, lets every host probe its pinglist peers as an agent would (K flows per pair, each
// flow's source port choosing its spine by a hash, the reply choosing its own), injects faulty
// elements and produces the per-flow windows (FlowObservation, with traced hops) and the per-pair
// windows today's blame reads. `weft bench localise` and tests/controller/localise_sim_test.cpp
// drive it.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "controller/flow_observation.hpp"
#include "controller/mesh_state.hpp"
#include "controller/topology.hpp"

namespace weft::controller::sim {

struct ClosSpec {
  size_t racks = 32;
  size_t hosts_per_rack = 32;
  size_t spines = 8;
  // Each host probes up to `intra_peers` hosts of its own rack and, Pingmesh style, the host at its
  // own position in the next `inter_peers` racks (0: every other rack).
  size_t intra_peers = 0;  // 0: every host of its rack
  size_t inter_peers = 0;
  size_t flows_per_pair = 8;       // K source ports per pair
  uint64_t probes_per_pair = 100;  // per window: 10 s at the default 100 ms interval
  int64_t window_ns = 10'000'000'000;
  bool traced = true;             // agents trace their flows (hops given); false: pairs only
  double background_loss = 1e-5;  // per element crossing
  int64_t noise_ns = 3'000;       // per flow's median RTT
  // Loss in bursts (a congested queue drops what arrives while it is full, and a prober sends to
  // its targets together): each prober's probes see a faulty element's loss times a factor of its
  // own for the window, log-normal with mean 1 and this spread (sigma of its log). 0: every probe
  // an independent coin flip.
  double burst_sigma = 0;
};

// One faulty element. Links fail in one direction (`direction` 0: from ends[0]); a host fails on
// its prober (direction 0: its own probes) or its responder (1: probes to it).
struct Fault {
  uint32_t element = kNoElement;
  int direction = 0;
  double loss = 0;         // per crossing
  int64_t latency_ns = 0;  // per crossing (a host: its responder's delay)
};

// The topology's YAML (the same text a topology file holds), with router addresses.
std::string clos_yaml(const ClosSpec& spec);
std::string router_address(const Topology& t, uint32_t router);

struct Probes {
  std::vector<FlowObservation> flows;
  std::vector<PairWindow> pairs;  // the same probes added up per pair, as today's mesh holds them
};

// One window of every host's probes with `faults` in place, ending at `end_unix_ns`.
Probes simulate(const Topology& t, const ClosSpec& spec, const std::vector<Fault>& faults,
                int64_t end_unix_ns, std::mt19937_64& rng);

// `count` distinct random faulty elements, the type first chosen evenly among host, host link,
// ToR-spine link, ToR and spine; loss 0.5-10 % or latency +0.2-5 ms (even odds).
std::vector<Fault> random_faults(const Topology& t, size_t count, std::mt19937_64& rng);

}  // namespace weft::controller::sim
