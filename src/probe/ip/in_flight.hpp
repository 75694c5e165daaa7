#pragma once
// The prober's bounded in-flight table: a ring of slots indexed by sequence number (seq % size).
// A probe keeps its slot after it is resolved so that a second answer can be told apart
// (duplicate) from one that comes after the timeout (late); the slot is reused by seq + size.
// When a slot is needed while its previous probe is still unresolved (more than `size` probes
// within one timeout), that probe is resolved early as lost and counted as evicted.
//
// The size is what the rate and the timeout need (prober_setup.cpp), not rounded up to a power of
// two (issue 17, RSS): at 10,000/s with a 1 s timeout 12,750 slots of 112 bytes (1.4 MB) instead of
// 16,384 of 120 (1.9 MB). The price is a division per lookup, a few per probe.
#include <algorithm>
#include <cstddef>
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

// Ordered widest first so that padding is 3 bytes (112 bytes, not 120): every slot of the table is
// touched once the ring has gone round.
struct Slot {
  uint64_t seq = 0;
  uint32_t tx_id = 0;   // SO_TIMESTAMPING OPT_ID of the datagram
  uint32_t target = 0;  // index and generation of the target (targets may be removed)
  uint32_t target_gen = 0;
  int fd = -1;  // TCP connect probe: its socket while connecting
  SlotState state = SlotState::empty;
  bool has_followup = false;  // the responder's kernel send time is in timing
  bool tx_id_valid = false;
  bool unsent = false;  // never left this host (out of descriptors...): not the network's loss
  uint8_t sock = 0;     // which UDP socket sent it
  ProbeTiming timing;   // deadline = tx_user_mono + timeout; answered at rx_user_mono
};

class InFlightTable {
 public:
  static constexpr size_t kMinSize = 1024;  // 112 KB: not worth sizing below
  explicit InFlightTable(size_t min_size) : slots_(std::max(min_size, kMinSize)), n_(slots_.size()) {}
  size_t size() const { return slots_.size(); }
  // Grows the ring (never shrinks), keeping every slot: done when the target list changes, never
  // on the packet path.
  void grow(size_t min_size) {
    const size_t n = std::max(min_size, kMinSize);
    if (n <= slots_.size()) return;
    std::vector<Slot> bigger(n);
    for (auto& s : slots_)
      if (s.state != SlotState::empty) bigger[s.seq % n] = s;
    slots_.swap(bigger);
    n_ = n;
  }
  Slot& at(uint64_t seq) { return slots_[seq % n_]; }
  // The slot of `seq` if it still holds that probe, else nullptr.
  Slot* find(uint64_t seq) {
    Slot& s = slots_[seq % n_];
    return (s.seq == seq && s.state != SlotState::empty) ? &s : nullptr;
  }

 private:
  std::vector<Slot> slots_;
  uint64_t n_ = 0;  // slots_.size(), kept for the modulo
};

}  // namespace weft::probe
