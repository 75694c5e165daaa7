// CPU time for the calibration programs (udp_floor*.c): this process's from getrusage, a child's
// from /proc/PID/stat (user + system), both in seconds.
#pragma once
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

static inline double self_cpu_seconds(void) {
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

static inline double proc_cpu_seconds(pid_t pid) {
  char path[64], buf[1024] = {0};
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  size_t got = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[got] = 0;
  const char* end = strrchr(buf, ')');
  unsigned long u = 0, s = 0;
  if (end) sscanf(end + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &u, &s);
  return (double)(u + s) / (double)sysconf(_SC_CLK_TCK);
}
