#pragma once
// NIC completion-timestamp arithmetic, free of any device: a NIC stamps completions with a raw
// counter that runs at the device clock (hca_core_clock, in kHz) and wraps at its width
// (completion_timestamp_mask, e.g. 2^48-1). Probes take differences of two stamps and convert them.
#include <cstdint>

namespace weft::rdma {

class NicClock {
 public:
  // khz: hca_core_clock from ibv_query_device_ex; mask: completion_timestamp_mask (all ones up to
  // the counter's width). Invalid values (khz 0, mask not of the form 2^k-1) make valid() false.
  constexpr NicClock(uint64_t khz, uint64_t mask) : khz_(khz), mask_(mask) {}

  constexpr bool valid() const { return khz_ != 0 && mask_ != 0 && ((mask_ + 1) & mask_) == 0; }
  constexpr uint64_t khz() const { return khz_; }
  constexpr uint64_t mask() const { return mask_; }

  // Ticks from `earlier` to `later` on the wrapping counter: correct across one wrap, so the
  // interval must be shorter than one period of the counter (2^48 ticks at 1 GHz is 3.2 days).
  constexpr uint64_t delta_ticks(uint64_t earlier, uint64_t later) const { return (later - earlier) & mask_; }

  // Exact ticks -> ns without overflowing 64 bits for any tick count (rounds down).
  constexpr uint64_t to_ns(uint64_t ticks) const {
    // ns = ticks * 1e6 / khz, split so neither product overflows.
    const uint64_t whole = ticks / khz_, rest = ticks % khz_;
    return whole * 1'000'000 + rest * 1'000'000 / khz_;
  }

  constexpr uint64_t delta_ns(uint64_t earlier, uint64_t later) const {
    return to_ns(delta_ticks(earlier, later));
  }

 private:
  uint64_t khz_;
  uint64_t mask_;
};

// Extends a wrapping counter to a monotonic 64-bit one. Feed it readings in order, spaced less
// than one period apart; each wrap adds mask+1.
class TickUnwrapper {
 public:
  explicit constexpr TickUnwrapper(uint64_t mask) : mask_(mask) {}

  constexpr uint64_t extend(uint64_t raw) {
    raw &= mask_;
    if (!started_) {
      started_ = true;
      last_ = raw;
      return raw;
    }
    last_ += (raw - (last_ & mask_)) & mask_;
    return last_;
  }

 private:
  uint64_t mask_;
  uint64_t last_ = 0;
  bool started_ = false;
};

}  // namespace weft::rdma
