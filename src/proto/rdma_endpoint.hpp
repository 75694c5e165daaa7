#pragma once
// An RDMA probe engine's address as the agent registers it and the controller hands it to peers
// in their pinglists (docs/api.md):
//   {"device":"rxe0","port":1,"link_layer":"ethernet","gid":"::ffff:10.9.0.1","gid_index":1,
//    "lid":0,"qpn":17,"qkey":286331153}
// Plain data (no verbs types), so the controller can keep and compare it without libibverbs. The
// agent converts it to and from the probe engine's verbs types (agent/rdma_endpoint.hpp).
#include <array>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "base/result.hpp"

namespace weft::proto {

inline constexpr size_t kMaxRdmaEndpoints = 16;           // per agent (registration), i.e. rails
inline constexpr uint32_t kDefaultRdmaQkey = 0x11111111;  // the Q_Key every engine uses unless told

struct RdmaEndpoint {
  std::string device;
  uint8_t port = 1;
  bool ethernet = true;  // RoCE: reached by GID; InfiniBand: by LID
  std::array<uint8_t, 16> gid{};
  uint16_t gid_index = 0;
  uint16_t lid = 0;
  uint32_t qpn = 0;
  uint32_t qkey = kDefaultRdmaQkey;

  bool operator==(const RdmaEndpoint&) const = default;
  std::string gid_text() const;
};

nlohmann::json rdma_endpoint_json(const RdmaEndpoint& e);
// Strict: every field of the right type and range, no unknown keys. Messages name the field
// ("qpn: ..."); the caller adds where the object was ("rdma[1]: ").
Result<RdmaEndpoint> parse_rdma_endpoint(const nlohmann::json& j);

}  // namespace weft::proto
