#pragma once
// The shared ring (kind shared-ring, the thesis's "shared write", N:1): N senders, each on its own
// RC connection, write into ONE ring at the receiver, which delivers every message in the order
// the senders reserved their space.
//
//   sender (open_connection with Kind::shared_ring; write_ring.cpp):
//     1. a credit: a receive posted for it on its own QP (slots per sender, READ-acknowledged);
//     2. one post list: WRITE the announcement {sequence, start unknown} into its control block
//        at the receiver, then FETCH_AND_ADD reserved_bytes(len) on the receiver's reservation
//        counter (one word for all senders); the old value is where its message goes;
//     3. if the ring has no room there yet: WRITE the announcement again with that start, then
//        wait (READing the receiver's released-bytes word) until it has;
//     4. WRITE_WITH_IMM the message at its start (imm = offset in the ring).
//   receiver (SharedRingReceiver): polls every sender's receive CQ; each arrival is checked (its
//   offset maps into the free part of the ring, after that sender's previous message, overlapping
//   nothing) and kept until the message at the receiver's tail is there; delivers that one.
//
// A sender that dies after its FETCH_AND_ADD and before its WRITE leaves a hole at some place
// in the ring: every later message waits behind it. The receiver notices the sender is gone (its
// side channel closes, or its QP fails), moves that sender's QP to the error state (nothing of it
// lands afterwards), takes its completions that are there, and then skips the hole when no live
// sender can own it (shared_ring_math.hpp judge_hole: a live sender that announced a message
// not yet arrived and no start, or the hole's start, may still write it; the receiver waits for
// that one). A live sender that stalls inside its reservation (stopped, not dead) blocks the ring
// until it resumes or its process goes: receive() then times out naming which sender it waits
// for, never returns anything unchecked.
#include <memory>
#include <vector>

#include "msg/connection.hpp"

namespace weft::msg {

struct SharedStats {
  uint64_t delivered = 0, bytes = 0;
  uint64_t holes = 0, hole_bytes = 0;  // reservations of gone senders skipped
  uint64_t senders_gone = 0;
};

struct SharedMessage {
  std::span<const std::byte> bytes;  // valid until the next receive()
  unsigned sender = 0;               // index of the sender's side channel in open_shared_receiver
};

class SharedRingReceiver {
 public:
  virtual ~SharedRingReceiver() = default;
  // The next message in reservation order. ECONNRESET once every sender is gone and all they
  // wrote was delivered; ETIMEDOUT naming what it waits for.
  virtual Result<SharedMessage> receive(milliseconds timeout) = 0;
  virtual const SharedStats& stats() const = 0;
  // Work requests this end posted (receives; it posts no sends).
  virtual uint64_t recv_wrs() const = 0;
  virtual unsigned senders() const = 0;
};

// One receiver for the senders at the other ends of `channels` (each set up like any connection:
// o.kind must be Kind::shared_ring; the senders pass the same max_message, slots, ring_bytes).
// Sets the senders up one after the other in the given order.
Result<std::unique_ptr<SharedRingReceiver>> open_shared_receiver(std::vector<rdma::SideChannel> channels,
                                                                 const Options& o);

}  // namespace weft::msg
