#pragma once
// CPU time and memory of a process, for benchmarks: CPU from the process's CPU-time clock
// (nanoseconds), memory from /proc.
#include <sys/types.h>

#include <cstdint>

namespace weft {

struct ProcStats {
  int64_t cpu_ns = 0;  // user + system time of all threads (ns from the process's CPU clock)
  int64_t rss_kb = 0;  // resident set size now
  int64_t hwm_kb = 0;  // peak resident set size
  bool ok = false;
};

// pid 0 = this process.
ProcStats read_proc_stats(pid_t pid = 0);

// This process's CPU time (all threads, user + system) in nanoseconds from its CPU-time clock
// (getrusage's microseconds where that clock is missing), where /proc counts clock ticks.
int64_t self_cpu_ns();

}  // namespace weft
