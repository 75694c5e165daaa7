#include "agent/supervisor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "agent/run_state.hpp"
#include "base/clock.hpp"

namespace weft::agent {

Duration RestartBackoff::after_failure(Duration ran) {
  if (ran >= kSteadyRun) next_ = kFirst;
  const Duration wait = next_;
  next_ = std::min(next_ * 2, kLongest);
  return wait;
}

Supervisor::Supervisor(RunState& state, std::string kind, std::string part)
    : state_(state), kind_(std::move(kind)), part_(std::move(part)) {}

bool Supervisor::failed(std::string_view error) {
  state_.alarm(kind_ + "_failed", fmt::format("{}: {}", part_, error));
  return restart_after(Duration::zero());
}

void Supervisor::running() { running_since_ns_ = mono_ns(); }

bool Supervisor::stopped(std::string_view why) {
  state_.alarm(kind_ + "_restarted", fmt::format("{} stopped: {}", part_, why));
  const Duration ran{running_since_ns_ ? mono_ns() - running_since_ns_ : 0};
  running_since_ns_ = 0;
  return restart_after(ran);
}

bool Supervisor::restart_after(Duration ran) {
  state_.restarts++;
  return state_.sleep_for(backoff_.after_failure(ran));
}

}  // namespace weft::agent
