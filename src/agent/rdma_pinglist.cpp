#include "agent/rdma_pinglist.hpp"

#include "agent/rdma_endpoint.hpp"

namespace weft::agent {

std::vector<std::vector<probe::RdmaTarget>> rdma_targets_by_rail(
    std::span<const proto::PinglistTarget> targets, size_t rails) {
  std::vector<std::vector<probe::RdmaTarget>> out(rails);
  for (const auto& t : targets) {
    if (!t.rdma || t.rail >= rails) continue;  // the decoder gives every rdma target its endpoint
    out[t.rail].push_back(rdma_target_of(*t.rdma, t.name));
  }
  return out;
}

}  // namespace weft::agent
