#pragma once
// The connection types (after the KnowYourMemory thesis, seed 002) and their names on the
// command line.
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace weft::msg {

enum class Kind : uint8_t {
  send_recv = 1,      // SEND into pre-posted receive slots
  send_recv_srq = 2,  // the same with the receives on a shared receive queue
  read_pull = 3,      // SEND a notice; the receiver RDMA-READs the message from the sender
  simplex_ring = 4,   // WRITE_WITH_IMM into the receiver's ring; acks WRITten back
  magic_ring = 5,     // the same over a double-mapped ring: a message never wraps
  duplex_ring = 6,    // magic ring; the sender READs the receiver's head (receiver makes no acks)
  faa_ring = 7,       // magic ring; space reserved with FETCH_AND_ADD on the receiver's tail word
  shared_ring = 8,    // faa_ring with N senders and one receiver (shared_ring.hpp); not duplex
};

std::string_view to_string(Kind k);
Result<Kind> parse_kind(std::string_view s);
// The duplex (1:1) types, what `--type all` runs; shared_ring is N:1 and not among them.
const std::vector<Kind>& all_kinds();

}  // namespace weft::msg
