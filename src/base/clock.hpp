#pragma once
// Clocks in integer nanoseconds. Kernel packet timestamps (SO_TIMESTAMPING) are CLOCK_REALTIME, so
// measured times use realtime; schedules and deadlines use CLOCK_MONOTONIC, which never steps.
#include <cerrno>
#include <cstdint>
#include <ctime>

namespace weft {

inline int64_t timespec_ns(const timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline timespec ns_timespec(int64_t ns) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  if (ts.tv_nsec < 0) {
    ts.tv_nsec += 1'000'000'000;
    ts.tv_sec -= 1;
  }
  return ts;
}

inline int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return timespec_ns(ts);
}

inline int64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return timespec_ns(ts);
}

// Sleeps until the monotonic time `t_ns` (returns at once if it has passed).
inline void sleep_until_mono(int64_t t_ns) {
  const timespec ts = ns_timespec(t_ns);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

}  // namespace weft
