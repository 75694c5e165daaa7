#include "base/proc_stats.hpp"

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace weft {

namespace {

// A process's CPU time (all threads, live and exited) in nanoseconds from its CPU-time clock, the
// scheduler's own count; /proc/PID/stat gives the same time in clock ticks (10 ms), too coarse for
// a process using a few percent of a core over a few seconds (issue 17). -1 if it cannot be read.
int64_t process_clock_ns(pid_t pid) {
  clockid_t clk = CLOCK_PROCESS_CPUTIME_ID;
  if (pid != 0 && clock_getcpuclockid(pid, &clk) != 0) return -1;
  timespec ts{};
  if (clock_gettime(clk, &ts) != 0) return -1;
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

ProcStats read_proc_stats(pid_t pid) {
  ProcStats s;
  const std::string base = pid == 0 ? "/proc/self" : "/proc/" + std::to_string(pid);
  if (FILE* f = std::fopen((base + "/stat").c_str(), "r")) {
    char buf[1024];
    size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = 0;
    // Fields after the command name (which may contain spaces): state is field 3, utime 14, stime 15.
    if (const char* p = std::strrchr(buf, ')')) {
      unsigned long long utime = 0, stime = 0;
      if (std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) == 2) {
        const long hz = sysconf(_SC_CLK_TCK);
        s.cpu_ns =
            static_cast<int64_t>((utime + stime) * (1'000'000'000ULL / static_cast<unsigned long long>(hz)));
        s.ok = true;
      }
    }
  }
  if (s.ok) {
    if (const int64_t ns = process_clock_ns(pid); ns >= 0) s.cpu_ns = ns;
  }
  if (FILE* f = std::fopen((base + "/status").c_str(), "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
      long long v = 0;
      if (std::sscanf(line, "VmRSS: %lld kB", &v) == 1) s.rss_kb = v;
      if (std::sscanf(line, "VmHWM: %lld kB", &v) == 1) s.hwm_kb = v;
    }
    std::fclose(f);
  }
  return s;
}

int64_t self_cpu_ns() {
  if (const int64_t ns = process_clock_ns(0); ns >= 0) return ns;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto ns = [](const timeval& t) {
    return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_usec * 1000;
  };
  return ns(ru.ru_utime) + ns(ru.ru_stime);
}

}  // namespace weft
