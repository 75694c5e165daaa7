#pragma once
// What `weft ping rdma` accepts as a target: DEVICE:WHERE, where DEVICE is the local RDMA device
// to probe from and WHERE is a GID (any IPv6 text form, e.g. ::ffff:10.9.0.2), lid:N
// (InfiniBand), or a host name / IPv4 address (its RoCE v2 GID, or asked by discovery).
#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace weft::probe {

struct RdmaTargetSpec {
  enum class Kind : uint8_t { gid, lid, host };
  std::string device;
  Kind kind = Kind::gid;
  ibv_gid gid{};     // kind gid
  uint16_t lid = 0;  // kind lid
  std::string host;  // kind host
};

Result<RdmaTargetSpec> parse_rdma_target(std::string_view text);

}  // namespace weft::probe
