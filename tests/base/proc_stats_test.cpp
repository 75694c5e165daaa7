#include "base/proc_stats.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

using namespace weft;
using namespace std::chrono_literals;

namespace {

// Spins until this process has used `ns` more CPU time (by its own clock).
void burn(int64_t ns) {
  const int64_t start = self_cpu_ns();
  volatile uint64_t x = 0;
  while (self_cpu_ns() - start < ns) x = x + 1;
}

}  // namespace

// Issue 17: the benchmarks compare a few percent of a core over seconds, so CPU time must resolve
// far below /proc's clock tick (10 ms). The process CPU clock counts nanoseconds: a reading of a
// spinning child that is not a multiple of 10 ms comes as soon as the child has run at all
// (readings are taken until one does, up to 10 s for a loaded machine); a tick-grained source
// never gives one.
TEST(ProcStats, AnotherProcessCpuTimeResolvesBelowAClockTick) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (;;) burn(1'000'000'000);
  }
  int off_tick = 0;
  int64_t last = 0;
  for (int i = 0; i < 1000 && off_tick == 0; ++i) {
    std::this_thread::sleep_for(10ms);
    const ProcStats s = read_proc_stats(child);
    ASSERT_TRUE(s.ok);
    EXPECT_GE(s.cpu_ns, last);
    if (s.cpu_ns % 10'000'000 != 0) ++off_tick;
    last = s.cpu_ns;
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_GT(off_tick, 0);
}

// This process's CPU time grows by what it burns, and both readers agree.
TEST(ProcStats, SelfCpuTimeFollowsTheWorkDone) {
  const int64_t a = self_cpu_ns();
  burn(30'000'000);
  const int64_t b = self_cpu_ns();
  EXPECT_GE(b - a, 30'000'000);
  const ProcStats s = read_proc_stats(0);
  const int64_t c = self_cpu_ns();
  ASSERT_TRUE(s.ok);
  EXPECT_GE(s.cpu_ns, b);
  EXPECT_LE(s.cpu_ns, c);
}
