#pragma once
// The usual RTT of a pair or a flow, moved once per window towards that window's median RTT.
//
// It follows a healthy RTT at 1/16 of the difference per window. A window more than half again
// above it (and 200 us) moves it only 1/256 of the way: otherwise a spine that stays 2 ms slower
// is its own new normal within a minute or two of 2 s windows (the Clos lab's +2 ms spine read
// +2.0 ms when named and +1.46 ms 20 s later), and blame and localisation, which judge the RTT
// against this, let go of a fault that is still there. A path that really got longer is accepted
// too, over a few hundred windows instead of a few dozen.

#include <algorithm>
#include <cstdint>

namespace weft::controller {

constexpr int64_t next_rtt_baseline(int64_t baseline_ns, int64_t median_ns) {
  if (median_ns <= 0) return baseline_ns;
  if (baseline_ns <= 0) return median_ns;
  const int64_t d = median_ns - baseline_ns;
  const bool elevated = d > std::max<int64_t>(baseline_ns / 2, 200'000);
  return baseline_ns + d / (elevated ? 256 : 16);
}

}  // namespace weft::controller
