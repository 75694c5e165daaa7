#pragma once
// CPU time and memory of a process, from /proc, for benchmarks.
#include <sys/types.h>

#include <cstdint>

namespace weft {

struct ProcStats {
  int64_t cpu_ns = 0;  // user + system time of all threads
  int64_t rss_kb = 0;  // resident set size now
  int64_t hwm_kb = 0;  // peak resident set size
  bool ok = false;
};

// pid 0 = this process.
ProcStats read_proc_stats(pid_t pid = 0);

// This process's CPU time (all threads, user + system) from getrusage: microseconds, where /proc
// counts clock ticks.
int64_t self_cpu_ns();

}  // namespace weft
