#pragma once
// The constructors of the connection types (internal; open_connection in connection.hpp picks one).
#include <memory>

#include "msg/connection.hpp"

namespace weft::msg {

// send_recv, send_recv_srq
Result<std::unique_ptr<Connection>> open_send_recv(rdma::SideChannel ch, const Options& o, bool use_srq);
// read_pull
Result<std::unique_ptr<Connection>> open_read_pull(rdma::SideChannel ch, const Options& o);

// The write-based rings differ in three choices.
struct RingMode {
  bool double_mapped = false;  // a message never wraps (else it skips to the next lap)
  bool read_ack = false;       // the sender READs the receiver's head (else the receiver WRITEs acks)
  bool reserve_faa = false;    // space reserved by FETCH_AND_ADD on the receiver's counter
  bool shared = false;  // shared_ring sender: others reserve in the same ring (announces, no order check)
};
// simplex_ring, magic_ring, duplex_ring, faa_ring
Result<std::unique_ptr<Connection>> open_write_ring(rdma::SideChannel ch, const Options& o, RingMode mode);

// The ring size a connection uses for o (see Options::ring_bytes).
uint64_t ring_bytes_for(const Options& o);

}  // namespace weft::msg
