#pragma once
// The RDMA prober's bounded in-flight table: a ring of slots indexed by seq & mask. A probe is
// resolved when all three of its events are in (PING send completion, PONG, follow-up), which
// may arrive in any order; when the PONG is in but the follow-up is not, after a grace period
// (then only the total RTT is known); and as lost at its deadline. Resolved slots keep their seq so
// that a second PONG is told apart (duplicate) from one after the deadline (late). Probes are sent
// with increasing seq and one timeout, so deadlines increase with seq and the sweep for
// timeouts walks from the oldest unresolved probe and stops at the first that is not yet due.
// Nothing here allocates after construction.
#include <cstdint>
#include <functional>
#include <vector>

#include "probe/rdma/rtt.hpp"

namespace weft::probe {

enum class RdmaSlotState : uint8_t { empty, pending, done, expired };

struct RdmaSlot {
  uint64_t seq = 0;
  RdmaSlotState state = RdmaSlotState::empty;
  bool have_tx = false, have_pong = false;
  uint32_t target = 0, target_gen = 0;
  int64_t deadline_mono_ns = 0;
  int64_t deadline_unix_ns = 0;  // which window the probe belongs to
  int64_t pong_mono_ns = 0;      // when the PONG was polled (start of the follow-up grace)
  RdmaProbeTiming timing;
};

enum class RdmaOutcome : uint8_t { answered, lost, evicted };
enum class RdmaMatch : uint8_t { ok, unknown, duplicate, late };

class RdmaInFlight {
 public:
  using Resolve = std::function<void(RdmaSlot&, RdmaOutcome)>;

  // size: rounded up to a power of two, at least 1024. on_resolve is called for every probe
  // exactly once (answered, lost or evicted) from the calls below.
  RdmaInFlight(size_t min_size, Resolve on_resolve);

  size_t size() const { return slots_.size(); }
  size_t pending() const { return pending_; }

  // A new probe. seq must be greater than every seq started before. If its slot still holds an
  // unresolved probe (more than size() probes within one timeout), that one is resolved as evicted.
  RdmaSlot& start(uint64_t seq, uint32_t target, uint32_t gen, int64_t post_mono_ns, int64_t deadline_mono_ns,
                  int64_t deadline_unix_ns);

  // The send completion of the PING.
  RdmaMatch on_tx(uint64_t seq, const CompletionStamp& stamp);
  // The PONG (now_mono: when it was polled).
  RdmaMatch on_pong(uint64_t seq, const CompletionStamp& stamp);
  // The responder's follow-up.
  RdmaMatch on_followup(uint64_t seq, int64_t delay_ns, bool hardware);
  // A PING send that failed at post or completed in error: lost at once.
  void on_send_failed(uint64_t seq);

  // Resolves probes whose deadline passed (lost, or answered without follow-up) and answered ones
  // whose follow-up grace passed. Call it regularly with the current monotonic time.
  void sweep(int64_t now_mono_ns, int64_t followup_grace_ns);

 private:
  RdmaSlot* find(uint64_t seq) {
    RdmaSlot& s = slots_[seq & mask_];
    return (s.seq == seq && s.state != RdmaSlotState::empty) ? &s : nullptr;
  }
  RdmaMatch classify(const RdmaSlot* s) const;
  void resolve(RdmaSlot& s, RdmaOutcome o);
  void try_complete(RdmaSlot& s);

  std::vector<RdmaSlot> slots_;
  uint64_t mask_ = 0;
  uint64_t oldest_ = 0;  // lowest seq that may still be pending (0: none started)
  uint64_t next_ = 0;    // one past the highest seq started
  size_t pending_ = 0;
  Resolve on_resolve_;
};

}  // namespace weft::probe
