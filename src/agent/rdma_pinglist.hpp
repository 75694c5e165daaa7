#pragma once
// The rdma part of a pinglist turned into what the agent's engines probe: entry {"name", "rail",
// "rdma": endpoint} goes to the engine of that rail (controller/pinglist.hpp explains rails).
#include <cstddef>
#include <span>
#include <vector>

#include "probe/rdma/engine.hpp"
#include "proto/pinglist.hpp"

namespace weft::agent {

// `targets` is the rdma protocol's targets, already decoded strictly (proto::decode_pinglist: a
// malformed entry fails the whole pinglist, so that a half-understood one is never probed);
// `rails` how many engines the agent runs. Result[i] holds the targets of engine i; entries of a
// rail the agent does not run are left out (the controller sends those during a change of engines).
std::vector<std::vector<probe::RdmaTarget>> rdma_targets_by_rail(
    std::span<const proto::PinglistTarget> targets, size_t rails);

}  // namespace weft::agent
