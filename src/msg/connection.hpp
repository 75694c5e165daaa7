#pragma once
// A message connection over RDMA: send a message of bytes, receive one, with a deadline; one
// implementation per connection type (kind.hpp), all RC, all duplex (either end sends).
//
// Rules every type keeps:
//  - credits by construction: a sender never sends what the receiver has no room or receive
//    for, so there is never an RNR (receiver not ready) retry, whatever the peers' speeds;
//  - a call never waits past its timeout: it returns an error with code ETIMEDOUT instead;
//  - a peer that dies (its process exits: the side channel closes) or a transport error (a work
//    completion in error, or the device's async event that our QP went fatal) ends every later
//    call with an error naming it; the connection is dead
//    then, and nothing it had not fully received and checked is delivered;
//  - every received message is checked against what the receiver expects (its sequence number,
//    its place in the ring or slot, its length) before it is handed out.
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/result.hpp"
#include "msg/kind.hpp"
#include "rdma/completion_queue.hpp"
#include "rdma/connect_options.hpp"
#include "rdma/side_channel.hpp"

namespace weft::msg {

using std::chrono::milliseconds;

struct Options {
  Kind kind = Kind::send_recv;
  uint32_t max_message = 65536;                // largest message, bytes
  uint32_t slots = 64;                         // messages in flight (receive slots, RECVs for the rings)
  uint64_t ring_bytes = 0;                     // rings: 0 = max(1 MiB, 4 * max_message) rounded up to pages
  rdma::WaitMode wait = rdma::WaitMode::busy;  // busy polling, or block on the completion channel
  std::string device;                          // empty: the first one
  rdma::ConnectOptions rdma{};
  milliseconds setup_timeout{5000};
  // shared_ring sender, tests only: reserve message n's space, then die without writing it.
  uint64_t test_abandon_at = UINT64_MAX;
};

// What a sender may still put in flight right now, and the connection's limits.
struct Capacity {
  uint64_t credits = 0;    // messages
  uint64_t ring_free = 0;  // bytes (rings; 0 for slot types)
  uint32_t max_message = 0;
  uint32_t slots = 0;
};

// Counts since the connection was made. Work requests are what this end posted.
struct Stats {
  uint64_t msgs_sent = 0, bytes_sent = 0, msgs_received = 0, bytes_received = 0;
  uint64_t send_wrs = 0;      // every work request posted to the send queue
  uint64_t recv_wrs = 0;      // receives posted (to the QP or the SRQ)
  uint64_t reads = 0;         // RDMA READs among send_wrs
  uint64_t atomics = 0;       // FETCH_AND_ADDs among send_wrs
  uint64_t acks = 0;          // credit/head updates among send_wrs
  uint64_t credit_waits = 0;  // sends that found no credit or ring space at first
  uint64_t srq_low = 0;       // send-recv-srq: times fewer than slots/4 receives were left posted
};

class Connection {
 public:
  virtual ~Connection() = default;
  // Sends data (at most max_message bytes). Returns once the data is handed to the NIC or copied;
  // the caller may reuse data at once.
  virtual Status send(std::span<const std::byte> data, milliseconds timeout) = 0;
  // The next message, in order. The bytes stay valid until the next receive() on this connection
  // (their slot or ring space is given back then).
  virtual Result<std::span<const std::byte>> receive(milliseconds timeout) = 0;
  // Waits until everything sent so far has reached the peer (its NIC acknowledged it): call it
  // before closing a connection whose last messages must arrive.
  virtual Status flush(milliseconds timeout) = 0;
  // A descriptor that becomes readable when a message may have arrived (WaitMode::channel), for
  // epoll; -1 in busy mode. Call receive(0ms) when it fires (it re-arms itself).
  virtual int event_fd() const = 0;
  virtual Capacity capacity() const = 0;
  virtual const Stats& stats() const = 0;
  virtual Kind kind() const = 0;
};

// Builds a connection of o.kind over an established side channel (connect or accept it first).
// Both ends must pass the same kind, max_message, slots and ring_bytes; a mismatch is an error
// naming both values. The side channel stays open to watch the peer.
Result<std::unique_ptr<Connection>> open_connection(rdma::SideChannel channel, const Options& o);

}  // namespace weft::msg
