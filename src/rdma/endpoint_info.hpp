#pragma once
// What two peers exchange to connect QPs and use each other's memory: QP number, PSN, LID, GID
// and one remote buffer (addr, rkey, length) plus the UD qkey. A fixed 56-byte little-endian
// record, so it fits in rdma_cm's connect private data (56 bytes) as well as on the TCP side channel.
#include <array>
#include <cstddef>
#include <span>

#include "base/result.hpp"
#include "rdma/connect_options.hpp"
#include "rdma/memory_region.hpp"

namespace weft::rdma {

struct EndpointInfo {
  QpAddress qp;
  RemoteBuf buf;
  uint32_t qkey = 0;

  static constexpr size_t kWireSize = 56;
  using Wire = std::array<std::byte, kWireSize>;

  Wire encode() const;
  static Result<EndpointInfo> decode(std::span<const std::byte> bytes);
};

}  // namespace weft::rdma
