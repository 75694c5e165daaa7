#pragma once
// One restart policy for every part the agent keeps alive: the responder, each prober and each
// RDMA rail. A part that cannot be made, or that stops on its own, raises an alarm
// ("<kind>_failed" / "<kind>_restarted"), counts one restart (health.prober_restarts counts the
// restarts of every part, whatever its kind) and is tried again after a back-off: 1 s, doubling
// while the part keeps failing, at most 60 s, and 1 s again once a part has run for a minute. A
// device or port that stays away for an hour thus costs 60 alarms, not 1,800, and a part that dies
// once in a while is back within a second. A planned stop (a new config) is no restart: the part's
// own loop goes round without telling the supervisor.
#include <cstdint>
#include <string>
#include <string_view>

#include "base/duration.hpp"

namespace weft::agent {

class RunState;

// The waits of one part, apart from the waiting (so that tests need no clock).
class RestartBackoff {
 public:
  static constexpr Duration kFirst = std::chrono::seconds(1);
  static constexpr Duration kLongest = std::chrono::seconds(60);
  static constexpr Duration kSteadyRun = std::chrono::seconds(60);  // ran this long: it was healthy

  // The wait before the next try after a failure; `ran` is how long the part ran (0: never made).
  Duration after_failure(Duration ran);

 private:
  Duration next_ = kFirst;
};

class Supervisor {
 public:
  // kind: the alarm's prefix ("responder", "prober", "rdma_engine"); part: the words that name this
  // part in its alarms ("responder", "udp prober", "rdma rail 0 (rxe0)").
  Supervisor(RunState& state, std::string kind, std::string part);

  // The part could not be made: alarm, one restart, then the back-off. False when the agent is
  // stopping (at once or during the wait): the caller's loop ends.
  bool failed(std::string_view error);
  // The part runs from now.
  void running();
  // The part stopped on its own (`why`): alarm, one restart, then the back-off. False when stopping.
  bool stopped(std::string_view why);

 private:
  bool restart_after(Duration ran);

  RunState& state_;
  std::string kind_, part_;
  RestartBackoff backoff_;
  int64_t running_since_ns_ = 0;
};

}  // namespace weft::agent
