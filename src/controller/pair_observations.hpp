#pragma once
// Fault localisation's input from today's mesh: one FlowObservation per pair (src_port 0, path
// unknown), from the latest pair windows. This is the stand-in until per-flow state
// (controller/flows.hpp, FlowTable::observations) feeds localisation with K flows per pair and their
// traced hops; element_watch.cpp calls it in one place (localisation_input).
#include <cstdint>
#include <vector>

#include "controller/flow_observation.hpp"
#include "controller/mesh_state.hpp"

namespace weft::controller {

std::vector<FlowObservation> pair_observations(const std::vector<PairWindow>& pairs);

}  // namespace weft::controller
