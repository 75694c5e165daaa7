#pragma once
// What the agent's threads share: the stop flag and its wake-up, the "register again" request an
// RDMA rail raises when its address changes, the finished windows not yet batched, the alarms not
// yet reported, and the counters every part adds to. The probers, the RDMA rails and the control
// loop each get a reference; none of them owns another.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "proto/report.hpp"
#include "proto/window_stats.hpp"

namespace weft::agent {

// Wall-clock time of an alarm, as reported.
int64_t unix_ns();

class RunState {
 public:
  // Sleeps up to `d`; false when the agent is stopping (at once, or during the sleep).
  bool sleep_for(std::chrono::nanoseconds d);
  bool is_stopping();
  // Sets the stop flag and wakes every sleeper; false when it was already set.
  bool request_stop();

  // An RDMA engine came or went: the control loop registers the new addresses.
  void addresses_changed();
  // Waits until `t`, a stop or a re-register request; returns (and clears) the request.
  bool wait_until(std::chrono::steady_clock::time_point t);
  // Clears a pending re-register request (a registration now carries the current addresses).
  void clear_reregister();

  void alarm(std::string kind, std::string message);
  void collect(proto::WindowStats&& w);
  std::vector<proto::WindowStats> take_collected();
  // Traced paths not yet reported (at most kMaxPendingPaths, the oldest dropped first), like the
  // alarms: pending_paths() copies them into a report, forget_paths(n) drops the first n once sent.
  static constexpr size_t kMaxPendingPaths = 4096;
  void add_path(proto::PathTrace&& p);
  std::vector<proto::PathTrace> pending_paths();
  void forget_paths(size_t n);
  // The alarms not yet reported, oldest first; forget_alarms(n) drops the first n once reported.
  std::vector<proto::AlarmEvent> pending_alarms();
  void forget_alarms(size_t n);

  std::atomic<uint64_t> windows_made{0};
  std::atomic<uint64_t> restarts{0};  // supervised parts re-made (agent/supervisor.hpp)

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool reregister_ = false;

  std::mutex collect_mu_;
  std::vector<proto::WindowStats> collected_;
  std::vector<proto::AlarmEvent> alarms_;
  std::vector<proto::PathTrace> paths_;
};

}  // namespace weft::agent
