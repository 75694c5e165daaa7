#include "agent/run_state.hpp"

#include <algorithm>
#include <utility>

#include "base/log.hpp"

namespace weft::agent {

int64_t unix_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool RunState::sleep_for(std::chrono::nanoseconds d) {
  std::unique_lock lk(mu_);
  return !cv_.wait_for(lk, d, [&] { return stopping_; });
}

bool RunState::is_stopping() {
  std::lock_guard lk(mu_);
  return stopping_;
}

bool RunState::request_stop() {
  {
    std::lock_guard lk(mu_);
    if (stopping_) return false;
    stopping_ = true;
  }
  cv_.notify_all();
  return true;
}

void RunState::addresses_changed() {
  {
    std::lock_guard lk(mu_);
    reregister_ = true;
  }
  cv_.notify_all();
}

bool RunState::wait_until(std::chrono::steady_clock::time_point t) {
  std::unique_lock lk(mu_);
  cv_.wait_until(lk, t, [&] { return stopping_ || reregister_; });
  return std::exchange(reregister_, false);
}

void RunState::clear_reregister() {
  std::lock_guard lk(mu_);
  reregister_ = false;
}

void RunState::alarm(std::string kind, std::string message) {
  log().warn("alarm {}: {}", kind, message);
  std::lock_guard lk(collect_mu_);
  // Bounded: a controller away for long must not let a flapping prober grow the agent.
  if (alarms_.size() < 100) alarms_.push_back({std::move(kind), std::move(message), unix_ns()});
}

void RunState::collect(proto::WindowStats&& w) {
  windows_made++;
  std::lock_guard lk(collect_mu_);
  collected_.push_back(std::move(w));
}

void RunState::add_path(proto::PathTrace&& p) {
  std::lock_guard lk(collect_mu_);
  if (paths_.size() >= kMaxPendingPaths) paths_.erase(paths_.begin());
  paths_.push_back(std::move(p));
}

std::vector<proto::PathTrace> RunState::pending_paths() {
  std::lock_guard lk(collect_mu_);
  return paths_;
}

void RunState::forget_paths(size_t n) {
  std::lock_guard lk(collect_mu_);
  paths_.erase(paths_.begin(), paths_.begin() + static_cast<ptrdiff_t>(std::min(paths_.size(), n)));
}

std::vector<proto::WindowStats> RunState::take_collected() {
  std::vector<proto::WindowStats> ws;
  std::lock_guard lk(collect_mu_);
  ws.swap(collected_);
  return ws;
}

std::vector<proto::AlarmEvent> RunState::pending_alarms() {
  std::lock_guard lk(collect_mu_);
  return alarms_;
}

void RunState::forget_alarms(size_t n) {
  std::lock_guard lk(collect_mu_);
  alarms_.erase(alarms_.begin(), alarms_.begin() + static_cast<ptrdiff_t>(std::min(alarms_.size(), n)));
}

}  // namespace weft::agent
