#pragma once
// Cheap timestamps for the timed loops of `weft rdma bench`, as perftest takes them (the TSC),
// turned into nanoseconds by the run's own calibration against the monotonic clock.
#include <cstdint>
#include <vector>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "base/clock.hpp"

namespace weft::cli {

struct Ticks {
  static int64_t now() {
#if defined(__x86_64__)
    return static_cast<int64_t>(__rdtsc());
#else
    return mono_ns();
#endif
  }
  int64_t t0 = now(), m0 = mono_ns();
  // Converts a span of tick stamps in place, with the ratio measured from construction to now.
  void to_ns(std::vector<int64_t>& v) const {
    const int64_t t1 = now(), m1 = mono_ns();
    const double ns_per_tick = t1 > t0 ? static_cast<double>(m1 - m0) / static_cast<double>(t1 - t0) : 1.0;
    for (auto& x : v) x = static_cast<int64_t>(static_cast<double>(x - t0) * ns_per_tick);
  }
};

}  // namespace weft::cli
