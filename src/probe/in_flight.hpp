#pragma once
// The prober's bounded in-flight table: a ring of slots indexed by sequence number (seq & mask).
// A probe keeps its slot after it is resolved so that a second answer can be told apart
// (duplicate) from one that comes after the timeout (late); the slot is reused by seq + size.
// When a slot is needed while its previous probe is still unresolved (more than `size` probes
// within one timeout), that probe is resolved early as lost and counted as evicted.
#include <cstdint>
#include <vector>

#include "probe/rtt.hpp"

namespace weft::probe {

enum class SlotState : uint8_t {
  empty,     // never used
  pending,   // sent, no answer yet
  answered,  // UDP reply received, waiting a little for the responder's follow-up
  done,      // resolved with an answer
  expired,   // resolved as lost
};

struct Slot {
  uint64_t seq = 0;
  SlotState state = SlotState::empty;
  bool has_followup = false;  // a follow-up came before its reply
  bool tx_id_valid = false;
  uint8_t sock = 0;           // which UDP socket sent it
  uint8_t followup_flags = 0;
  uint32_t tx_id = 0;         // SO_TIMESTAMPING OPT_ID of the datagram
  uint32_t target = 0;        // index and generation of the target (targets may be removed)
  uint32_t target_gen = 0;
  int fd = -1;                // TCP connect probe: its socket while connecting
  int64_t deadline_mono = 0;
  int64_t answered_mono = 0;
  int64_t followup_rx_ns = 0, followup_tx_ns = 0;
  ProbeTiming timing;
};

class InFlightTable {
 public:
  explicit InFlightTable(size_t min_size) {
    size_t n = 1024;
    while (n < min_size) n <<= 1;
    slots_.resize(n);
    mask_ = n - 1;
  }
  size_t size() const { return slots_.size(); }
  Slot& at(uint64_t seq) { return slots_[seq & mask_]; }
  // The slot of `seq` if it still holds that probe, else nullptr.
  Slot* find(uint64_t seq) {
    Slot& s = slots_[seq & mask_];
    return (s.seq == seq && s.state != SlotState::empty) ? &s : nullptr;
  }

 private:
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
};

}  // namespace weft::probe
