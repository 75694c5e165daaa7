#include "agent/rdma_pinglist.hpp"

#include <nlohmann/json.hpp>

#include "agent/rdma_endpoint.hpp"
#include "agent/wire.hpp"

namespace weft::agent {

Result<std::vector<std::vector<probe::RdmaTarget>>> rdma_targets_by_rail(const nlohmann::json& targets,
                                                                         size_t rails) {
  if (!targets.is_array()) return fail("rdma targets: expected a list");
  std::vector<std::vector<probe::RdmaTarget>> out(rails);
  for (size_t i = 0; i < targets.size(); ++i) {
    const auto& t = targets[i];
    if (!t.is_object()) return fail("rdma targets[{}]: expected an object", i);
    auto name = t.find("name");
    if (name == t.end() || !name->is_string() || name->get<std::string>().empty() ||
        name->get<std::string>().size() > kMaxNameLength)
      return fail("rdma targets[{}].name: required, 1 to {} bytes", i, kMaxNameLength);
    uint64_t rail = 0;
    if (auto r = t.find("rail"); r != t.end()) {
      if (!r->is_number_unsigned()) return fail("rdma targets[{}].rail: expected an unsigned integer", i);
      rail = r->get<uint64_t>();
    }
    auto ep = t.find("rdma");
    if (ep == t.end()) return fail("rdma targets[{}] ({}): no rdma address", i, name->get<std::string>());
    auto e = parse_rdma_endpoint(*ep);
    if (!e) return fail("rdma targets[{}].rdma: {}", i, e.error().message);
    // A rail the agent does not run: the controller only sends those during a change of engines.
    if (rail >= rails) continue;
    out[rail].push_back(rdma_target_of(*e, name->get<std::string>()));
  }
  return out;
}

}  // namespace weft::agent
