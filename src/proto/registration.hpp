#pragma once
// What an agent tells the controller at POST /api/v1/register (docs/api.md): the agent encodes
// it, the controller decodes and checks it (and replays stored bodies through the same decoder
// after a restart).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "proto/protocol.hpp"
#include "proto/rdma_endpoint.hpp"

namespace weft::proto {

struct Registration {
  std::string name;
  std::vector<std::string> addresses;  // the first is the one peers probe
  std::vector<Protocol> protocols;
  std::string version;
  uint16_t udp_port = 0;
  uint16_t tcp_port = 0;
  // One per RDMA probe engine, in the agent's order (rail 0, 1, ...). Empty when the agent runs
  // none (or none could start yet): it is then neither given nor made an rdma target.
  std::vector<RdmaEndpoint> rdma{};
};

std::string registration_json(const Registration& r);
// Strict: name a host name (names.hpp), addresses 1 to 16 IP literals (peers probe them as they
// are), known protocols, ports 0..65535, RDMA endpoints only with protocol rdma. Every error
// message names the field; the controller answers it with 400.
Result<Registration> parse_registration(std::string_view body);

}  // namespace weft::proto
