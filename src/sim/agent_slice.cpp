#include "sim/agent_slice.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "base/clock.hpp"
#include "base/proc_stats.hpp"

namespace weft::sim {

namespace {

bool write_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = ::write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Reads one SliceReport, waiting at most until `deadline_mono` (ns) for it.
bool read_report(int fd, SliceReport& out, int64_t deadline_mono) {
  char* c = reinterpret_cast<char*>(&out);
  size_t got = 0;
  while (got < sizeof out) {
    const int64_t left_ms = (deadline_mono - mono_ns()) / 1'000'000;
    if (left_ms <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left_ms, 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return false;
    if (r == 0) continue;
    ssize_t n = ::read(fd, c + got, sizeof out - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // the child died
    got += static_cast<size_t>(n);
  }
  return true;
}

// The child. SIGTERM is blocked before the first agent starts, so every agent thread inherits the
// mask and only the sigwait below takes it.
[[noreturn]] void child_main(std::vector<agent::AgentConfig> cfgs, int fd) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  SliceReport rep;
  rep.rss_kb_before = read_proc_stats().rss_kb;
  std::vector<std::unique_ptr<agent::Agent>> agents;
  agents.reserve(cfgs.size());
  for (auto& c : cfgs) {
    std::string name = c.name;
    auto a = std::make_unique<agent::Agent>(std::move(c));
    if (auto st = a->start(); !st) {
      if (rep.start_failures++ == 0)
        fmt::print(stderr, "bench agents: agent {}: {}\n", name, st.error().message);
      continue;
    }
    agents.push_back(std::move(a));
  }
  rep.agents = agents.size();
  if (!write_all(fd, &rep, sizeof rep)) _exit(1);
  int sig = 0;
  sigwait(&set, &sig);
  // Agent::stop() waits for the agent's threads (a prober takes up to ~100 ms to notice): one at a
  // time, a thousand agents would take minutes, so several stoppers share them.
  const int64_t t0 = mono_ns();
  const size_t stoppers = std::min<size_t>(32, std::max<size_t>(1, agents.size()));
  std::vector<std::thread> threads;
  for (size_t k = 0; k < stoppers; ++k)
    threads.emplace_back([&, k] {
      for (size_t i = k; i < agents.size(); i += stoppers) agents[i]->stop();
    });
  for (auto& t : threads) t.join();
  rep.stop_s = static_cast<double>(mono_ns() - t0) / 1e9;
  for (const auto& a : agents) {
    const auto s = a->stats();
    rep.windows_made += s.windows_made;
    rep.windows_delivered += s.windows_delivered;
    rep.reports_sent += s.reports_sent;
    rep.report_failures += s.report_failures;
    rep.prober_restarts += s.prober_restarts;
    rep.pending_windows += s.pending_windows;
    rep.dropped_windows += s.dropped_windows;
  }
  (void)write_all(fd, &rep, sizeof rep);
  // The agents are stopped; their memory goes with the process (destroying a thousand of them
  // one by one would only add to the time the parent waits).
  _exit(0);
}

}  // namespace

Result<std::unique_ptr<AgentSlice>> AgentSlice::start(std::vector<agent::AgentConfig> agents) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return fail("bench agents: pipe failed");
  pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return fail("bench agents: fork failed");
  }
  if (child == 0) {
    ::close(fds[0]);
    child_main(std::move(agents), fds[1]);
  }
  ::close(fds[1]);
  std::unique_ptr<AgentSlice> s(new AgentSlice(child, fds[0]));
  // Starting only spawns threads, but a thousand of them on a loaded machine can take a while.
  if (!read_report(fds[0], s->started_, mono_ns() + 300'000'000'000))
    return fail("bench agents: the slice process {} did not start its agents", child);
  return s;
}

Result<SliceReport> AgentSlice::stop(std::chrono::seconds timeout) {
  if (pid_ <= 0) return fail("bench agents: slice already stopped");
  const pid_t pid = pid_;
  ::kill(pid_, SIGTERM);
  SliceReport rep;
  const bool ok = read_report(fd_, rep, mono_ns() + std::chrono::nanoseconds(timeout).count());
  if (!ok) ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  ::close(fd_);
  pid_ = -1;
  fd_ = -1;
  if (!ok) {
    if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
      return fail("bench agents: slice process {} died of signal {} ({})", pid, WTERMSIG(status),
                  strsignal(WTERMSIG(status)));
    if (WIFEXITED(status))
      return fail("bench agents: slice process {} exited with {} before sending its totals", pid,
                  WEXITSTATUS(status));
    return fail("bench agents: slice process {} did not stop within {} s (killed)", pid, timeout.count());
  }
  return rep;
}

AgentSlice::~AgentSlice() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  ::close(fd_);
}

}  // namespace weft::sim
