#pragma once
// The agent's IP probers: one per protocol (udp, tcp), each run by its own thread and re-created
// (with an alarm) when it dies. A new pinglist changes a prober's targets in place; a new interval,
// timeout, window or bind address restarts it (a planned stop, not counted as a restart).
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "agent/run_state.hpp"
#include "probe/ip/prober.hpp"
#include "proto/protocol.hpp"

namespace weft::agent {

// What the pinglist asks one protocol's prober to do.
struct ProberPlan {
  probe::ProberConfig config;
  std::vector<probe::Target> targets;
};

class ProberRuns {
 public:
  explicit ProberRuns(RunState& state);
  ~ProberRuns();
  ProberRuns(const ProberRuns&) = delete;
  ProberRuns& operator=(const ProberRuns&) = delete;

  // Starts the probers `wanted` names that do not run yet and reconfigures the others; a running
  // prober the pinglist no longer names keeps its thread and probes nobody.
  void apply(std::map<proto::Protocol, ProberPlan> wanted);
  // Stops the running probers (after RunState::request_stop(), so their threads exit).
  void stop();
  // Joins the threads; only once no apply() can run any more.
  void join();
  // Probes sent by every prober since the agent started, restarted ones included.
  uint64_t probes_sent();

 private:
  struct Run;
  void loop(Run& r);

  RunState& state_;
  std::mutex mu_;
  std::map<proto::Protocol, std::unique_ptr<Run>> runs_;
};

}  // namespace weft::agent
