#pragma once
// The controller's running fault localisation (localise.hpp): per protocol, the state that keeps
// verdicts steady between calls and the latest answer, for /api/v1/suspects, /api/v1/topology and
// /metrics (docs/api.md, docs/metrics.md). Thread-safe; one localisation per protocol at a time,
// and a caller within `kReuseNs` (or 10 times the last localisation's time, if longer) of the last
// one gets the same answer.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "controller/flows.hpp"
#include "controller/localise.hpp"
#include "controller/mesh_state.hpp"
#include "controller/metrics_text.hpp"
#include "proto/protocol.hpp"

namespace weft::controller {

// Localisation's input for one protocol: the per-flow state's observations (one per flow where
// agents report flows, one per pair where they do not: FlowTable::observations), without the
// windows of agents that were down during them.
std::vector<FlowObservation> localisation_input(const MeshView& mesh, const FlowTable& flows,
                                                proto::Protocol protocol, int64_t now_unix_ns);

class ElementWatch {
 public:
  static constexpr int64_t kReuseNs = 1'000'000'000;

  struct Answer {
    std::shared_ptr<const Topology> topology;
    Localisation result;
    int64_t at_unix_ns = 0;
  };

  // Localises `protocol` over the topology (null: none configured, an empty answer).
  Answer update(const std::shared_ptr<const Topology>& topology, proto::Protocol protocol,
                const MeshView& mesh, const FlowTable& flows, int64_t now_unix_ns);
  // The latest answer of every protocol localised so far.
  std::map<proto::Protocol, Answer> latest() const;

 private:
  mutable std::mutex mu_;
  struct PerProtocol {
    LocaliserState state;
    Answer last;
    int64_t cost_ns = 0;  // how long the last localisation took
  };
  std::map<proto::Protocol, PerProtocol> protocols_;
};

// The "elements" list of /api/v1/suspects (docs/api.md).
nlohmann::json elements_json(const Localisation& l);
// The "localisation" object of /api/v1/suspects: what the verdicts rest on and what was left out
// (flows looked at, with a traced path, flapping; ends the topology does not place; stale windows
// and whose), so that a host missing from the evidence is visible.
nlohmann::json coverage_json(const Localisation& l);
// GET /api/v1/topology: the elements and, from the latest answers, the state of the named ones.
nlohmann::json topology_json(const Topology* topology,
                             const std::map<proto::Protocol, ElementWatch::Answer>& latest);
// weft_element_suspect and weft_element_loss_ratio, per element of the topology and protocol.
void render_element_metrics(PromText& out, const std::map<proto::Protocol, ElementWatch::Answer>& latest);

}  // namespace weft::controller
