#pragma once
// A forked child process holding a slice of `weft bench agents`' agents: real agent::Agent
// instances, the code `weft agent` runs (registration, pinglist sync, UDP/TCP probers and
// responder, outbox and reports), each on its own address. A fleet of them is split over a few
// slices so that no process needs more than its share of threads (4 per agent) and descriptors, and
// the parent can read each slice's CPU time and memory from /proc while the agents run.
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "agent/agent.hpp"
#include "base/result.hpp"

namespace weft::sim {

// What a slice says once its agents started, and again (with their totals) once they stopped.
struct SliceReport {
  uint64_t agents = 0;
  uint64_t start_failures = 0;  // Agent::start() refused (the first reason is on stderr)
  int64_t rss_kb_before = 0;    // the child's RSS before it made any agent
  // Sums of agent::AgentStats over the slice (after stop).
  uint64_t windows_made = 0;
  uint64_t windows_delivered = 0;
  uint64_t reports_sent = 0;
  uint64_t report_failures = 0;
  uint64_t prober_restarts = 0;
  uint64_t pending_windows = 0;
  uint64_t dropped_windows = 0;
  double stop_s = 0;  // how long stopping every agent took

  // Adds another slice's agent sums (stop_s: the longest; agents, start failures and RSS are the
  // caller's to count per slice).
  void add_sums(const SliceReport& o) {
    windows_made += o.windows_made;
    windows_delivered += o.windows_delivered;
    reports_sent += o.reports_sent;
    report_failures += o.report_failures;
    prober_restarts += o.prober_restarts;
    pending_windows += o.pending_windows;
    dropped_windows += o.dropped_windows;
    stop_s = std::max(stop_s, o.stop_s);
  }
};

class AgentSlice {
 public:
  // Forks; the child starts every agent of `agents` and the call returns once it has (each start
  // only spawns threads; registering is up to the agents). Call before the parent starts threads.
  static Result<std::unique_ptr<AgentSlice>> start(std::vector<agent::AgentConfig> agents);
  AgentSlice(const AgentSlice&) = delete;
  AgentSlice& operator=(const AgentSlice&) = delete;
  ~AgentSlice();

  pid_t pid() const { return pid_; }
  const SliceReport& started() const { return started_; }
  // SIGTERM: the child stops its agents (several at a time) and sends its totals. After `timeout`
  // without them the child is killed and the call fails.
  Result<SliceReport> stop(std::chrono::seconds timeout);

 private:
  AgentSlice(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  pid_t pid_ = -1;
  int fd_ = -1;  // the child's reports
  SliceReport started_;
};

}  // namespace weft::sim
