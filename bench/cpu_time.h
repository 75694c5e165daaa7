// CPU time for the calibration programs (udp_floor*.c), in seconds to the nanosecond: this
// process's and a child's from their CPU-time clocks (the scheduler's own count, as `weft bench
// probe` reads prober and responder: base/proc_stats.cpp). /proc/PID/stat counts 10 ms ticks, too
// coarse for a few percent of a core over a few seconds (issue 17). Also the monotonic clock, to
// divide by the interval really measured.
#pragma once
#include <sys/types.h>
#include <time.h>

static inline double clock_seconds(clockid_t clk) {
  struct timespec ts;
  if (clock_gettime(clk, &ts) != 0) return 0;
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline double self_cpu_seconds(void) { return clock_seconds(CLOCK_PROCESS_CPUTIME_ID); }

static inline double proc_cpu_seconds(pid_t pid) {
  clockid_t clk;
  if (clock_getcpuclockid(pid, &clk) != 0) return 0;
  return clock_seconds(clk);
}

static inline double mono_seconds(void) { return clock_seconds(CLOCK_MONOTONIC); }
