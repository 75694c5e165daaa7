#pragma once
// Fault localisation: which network element (a host's stack, a cable, a ToR, a spine) explains the
// loss and latency of the probe flows, given the topology (topology.hpp). docs/localisation.md says
// why it works this way and what it cannot tell apart.
//
// The method is NetBouncer's (Tan et al., NSDI 2019): a probe survives a path when it survives
// every element on it, so -ln(success of a flow) is the sum of -ln(success) of the elements it
// crosses, a linear system over the path matrix. It is fitted by non-negative least squares with
// an L1 penalty (most elements are healthy), by coordinate descent with an active set; latency the
// same way, the extra RTT over each flow's own baseline being additive along the path.
//  - A flow whose request path is known (its traced hops map onto one path) crosses that path; a
//    flow without one (src_port 0, no answer, a trace the topology disagrees with) crosses each of
//    the ECMP paths with equal weight. Replies take their own ECMP choice, never traced: always a
//    mixture.
//  - Each cable has a variable per direction and each host two, its prober (its own probes) and its
//    responder (probes to it). The cable under a host carries both, so loss on both a host's own
//    probes and probes to it is named as its link; loss on one side only is named as the host.
//    A slow responder (responder_delay_p50 well above the fleet's) is named as the host, never as
//    a link: the network RTT leaves the responder's time out.
//  - An element is named when its estimate is large enough (min_loss, min_extra_latency_ns) and
//    its z-score (the estimate over its standard error) passes enter_score; once named it stays
//    while it passes stay_score, and is cleared as soon as it does not (hysteresis, no flapping
//    verdicts). `since` is when the current streak began.
//  - Flows whose path flaps are left out of the fit; the elements their paths share are named with
//    the reason "flapping".
// Pure: no I/O, no locks; the caller holds LocaliserState between calls (one per protocol).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "controller/flow_observation.hpp"
#include "controller/topology.hpp"

namespace weft::controller {

struct LocaliseOptions {
  double min_loss = 0.002;                 // per crossing; below this an element is healthy
  int64_t min_extra_latency_ns = 100'000;  // per crossing
  double enter_score = 5.0;                // z-score to be named
  double stay_score = 3.0;                 // z-score to stay named
  int64_t max_age_ns = 20'000'000'000;     // observations ending earlier than now - this are left out
  size_t max_examples = 3;
  size_t max_disagreements = 20;  // traced paths the topology disagrees with, listed
};

struct ElementEvidence {
  size_t flows = 0;      // flows that cross the element (on their known path, or on every candidate)
  size_t bad_flows = 0;  // of those, flows that lost probes (loss) or were slower (latency)
  size_t pairs = 0;      // distinct (src, dst) among the flows
  std::vector<std::string> examples;  // the worst flows, e.g. "h1 -> h7 sport 40003: 9/100 lost"
};

struct ElementSuspect {
  ElementType type = ElementType::link;
  std::string name;
  std::string reason;     // "loss", "latency", "loss+latency" or "flapping"
  std::string detail;     // e.g. "tor1 -> spine1" (the direction), "its own probes", "probes to it"
  double confidence = 0;  // 0.5 at the naming threshold, towards 1 with stronger evidence
  double loss_ratio = 0;  // probes lost per crossing (links: both directions added)
  int64_t extra_latency_ns = 0;
  int64_t since_unix_ns = 0;
  double score = 0;  // the z-score behind the confidence
  ElementEvidence evidence;
};

struct Localisation {
  std::vector<ElementSuspect> elements;  // worst first
  size_t flows = 0;                      // fresh observations looked at
  size_t flows_known_path = 0;           // of those, with a traced path that maps onto the topology
  size_t flows_flapping = 0;
  size_t flows_unplaced = 0;                // an end the topology does not place: left out
  std::vector<std::string> unplaced_hosts;  // those ends (at most 20)
  // Observations whose window ended more than max_age_ns ago: left out, and said so, because a
  // prober whose reports lag (a busy agent, a slow link to the controller) would otherwise vanish
  // from the verdicts without a word.
  size_t flows_stale = 0;
  std::vector<std::string> stale_hosts;    // their probers (at most 20), each once
  int64_t stale_oldest_end_unix_ns = 0;    // the oldest such window's end (0: none)
  std::vector<std::string> disagreements;  // "h1 -> h7 sport 40003: hop 2 (10.9.9.9) is no router ..."
};

// What localisation remembers between calls (per protocol): when each named element's current
// streak began. Small: one entry per named element.
struct LocaliserState {
  std::map<std::string, int64_t, std::less<>> named_since;
};

Localisation localise(const Topology& topo, const std::vector<FlowObservation>& flows, int64_t now_unix_ns,
                      LocaliserState& state, const LocaliseOptions& opt = {});

}  // namespace weft::controller
