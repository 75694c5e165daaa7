#pragma once
// The rdma part of a pinglist turned into what the agent's engines probe: entry {"name", "rail",
// "rdma": endpoint} goes to the engine of that rail (controller/pinglist.hpp explains rails).
#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <vector>

#include "base/result.hpp"
#include "probe/rdma_engine.hpp"

namespace weft::agent {

// `targets` is the protocol's "targets" array; `rails` how many engines the agent runs. Result[i]
// holds the targets of engine i. Any malformed entry fails the whole list (the agent then keeps
// its previous targets and says why), so that a half-understood pinglist is never probed.
Result<std::vector<std::vector<probe::RdmaTarget>>> rdma_targets_by_rail(const nlohmann::json& targets,
                                                                         size_t rails);

}  // namespace weft::agent
