#include "msg/shared_ring_math.hpp"

#include <algorithm>

namespace weft::msg {

HoleVerdict judge_hole(uint64_t tail, uint64_t reserved, std::optional<uint64_t> next_arrived,
                       std::span<const SenderView> senders) {
  HoleVerdict v;
  // Nothing reserved at tail yet: no hole, just no message (differences are modular).
  if (reserved - tail == 0 || reserved - tail > (uint64_t{1} << 63)) return v;
  uint64_t limit = reserved;
  if (next_arrived) limit = std::min(limit, *next_arrived);
  for (size_t i = 0; i < senders.size(); ++i) {
    const SenderView& s = senders[i];
    if (s.gone) continue;
    const uint64_t seq = s.announce >> 48, start8 = s.announce & kStartUnknown;
    if (seq == (s.arrived & 0xffff)) continue;  // nothing in flight
    const bool one_in_flight = seq == ((s.arrived + 1) & 0xffff);
    if (!one_in_flight || start8 == kStartUnknown) {
      v.waiting_for = static_cast<int>(i);  // it may be reserving tail right now
      return v;
    }
    // Its reservation, as a counter at or after tail (2^51 bytes of range).
    const uint64_t ahead = ((start8 - tail / 8) & kStartUnknown) * 8;
    if (tail % 8 != 0 || ahead == 0) {
      v.waiting_for = static_cast<int>(i);  // it owns tail and will write it
      return v;
    }
    if (ahead < (uint64_t{1} << 50)) limit = std::min(limit, tail + ahead);
  }
  v.skip = limit != tail;
  v.to = limit;
  return v;
}

}  // namespace weft::msg
