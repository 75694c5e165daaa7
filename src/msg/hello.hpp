#pragma once
// The record both ends of a message connection exchange over the TCP side channel before any
// RDMA traffic: the parameters both must agree on (type, message size, slots, ring size), the QP
// address, and the three memory areas the peer may touch (receive ring or slots, send area for
// RDMA READ, control words). A mismatch is reported with both values, never left to time out.
#include <array>
#include <cstddef>
#include <span>

#include "base/result.hpp"
#include "msg/kind.hpp"
#include "rdma/connect_options.hpp"
#include "rdma/memory_region.hpp"

namespace weft::msg {

struct Hello {
  Kind kind = Kind::send_recv;
  uint32_t max_message = 0;
  uint32_t slots = 0;
  uint64_t ring_bytes = 0;
  rdma::QpAddress qp;
  rdma::RemoteBuf inbox;   // where the peer WRITEs messages (rings)
  rdma::RemoteBuf outbox;  // where the peer READs messages from (read-pull)
  rdma::RemoteBuf ctrl;    // control words (credits, head, reservation counter)

  static constexpr size_t kWireSize = 112;
  using Wire = std::array<std::byte, kWireSize>;
  Wire encode() const;
  // Checks magic, version, the kind, and that QPN/PSN fit 24 bits.
  static Result<Hello> decode(std::span<const std::byte> bytes);
  // Empty if both ends can talk, else what differs ("peer has max_message 4096, we have 65536").
  static Status compatible(const Hello& mine, const Hello& theirs);
};

}  // namespace weft::msg
