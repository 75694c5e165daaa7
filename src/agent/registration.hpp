#pragma once
// What an agent tells the controller at POST /api/v1/register (docs/api.md). The agent encodes
// it; the controller (one layer up) decodes and checks it (controller/registration.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include "agent/rdma_endpoint.hpp"
#include "probe/window.hpp"

namespace weft::agent {

struct Registration {
  std::string name;
  std::vector<std::string> addresses;  // the first is the one peers probe
  std::vector<probe::Protocol> protocols;
  std::string version;
  uint16_t udp_port = 0;
  uint16_t tcp_port = 0;
  // One per RDMA probe engine, in the agent's order (rail 0, 1, ...). Empty when the agent runs
  // none (or none could start yet): it is then neither given nor made an rdma target.
  std::vector<RdmaEndpoint> rdma{};
};

std::string registration_json(const Registration& r);

}  // namespace weft::agent
