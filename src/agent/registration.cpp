#include "agent/registration.hpp"

#include <nlohmann/json.hpp>

namespace weft::agent {

std::string registration_json(const Registration& r) {
  nlohmann::json j{{"name", r.name},
                   {"addresses", r.addresses},
                   {"version", r.version},
                   {"udp_port", r.udp_port},
                   {"tcp_port", r.tcp_port}};
  j["protocols"] = nlohmann::json::array();
  for (auto p : r.protocols) j["protocols"].push_back(probe::to_string(p));
  if (!r.rdma.empty()) {
    j["rdma"] = nlohmann::json::array();
    for (const auto& e : r.rdma) j["rdma"].push_back(rdma_endpoint_json(e));
  }
  return j.dump();
}

}  // namespace weft::agent
