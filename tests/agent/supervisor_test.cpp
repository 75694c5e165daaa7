// The agent's one restart policy (agent/supervisor.hpp): the back-off and what a failure reports.
#include "agent/supervisor.hpp"

#include <gtest/gtest.h>

#include <chrono>

#include "agent/run_state.hpp"

using namespace std::chrono_literals;
using weft::Duration;
using weft::agent::RestartBackoff;
using weft::agent::RunState;
using weft::agent::Supervisor;

TEST(RestartBackoff, DoublesFromOneSecondToAMinuteWhileFailing) {
  RestartBackoff b;
  std::vector<Duration> waits;
  for (int i = 0; i < 9; ++i) waits.push_back(b.after_failure(Duration::zero()));
  const std::vector<Duration> want{1s, 2s, 4s, 8s, 16s, 32s, 60s, 60s, 60s};
  EXPECT_EQ(waits, want);
}

TEST(RestartBackoff, AShortRunKeepsTheBackoffASteadyRunResetsIt) {
  RestartBackoff b;
  for (int i = 0; i < 4; ++i) b.after_failure(Duration::zero());  // 1, 2, 4, 8
  EXPECT_EQ(b.after_failure(5s), 16s);                            // died after 5 s: still failing
  EXPECT_EQ(b.after_failure(RestartBackoff::kSteadyRun), 1s);     // ran a minute: healthy again
  EXPECT_EQ(b.after_failure(Duration::zero()), 2s);
}

TEST(Supervisor, EveryFailureIsOneAlarmAndOneRestartAndStoppingEndsTheWait) {
  RunState state;
  state.request_stop();  // the waits return at once (false), so the test takes no time
  Supervisor s(state, "prober", "udp prober");
  EXPECT_FALSE(s.failed("bind: address in use"));
  s.running();
  EXPECT_FALSE(s.stopped("socket closed"));
  EXPECT_EQ(state.restarts.load(), 2u);
  auto alarms = state.pending_alarms();
  ASSERT_EQ(alarms.size(), 2u);
  EXPECT_EQ(alarms[0].kind, "prober_failed");
  EXPECT_EQ(alarms[0].message, "udp prober: bind: address in use");
  EXPECT_EQ(alarms[1].kind, "prober_restarted");
  EXPECT_EQ(alarms[1].message, "udp prober stopped: socket closed");
}

TEST(Supervisor, WaitsTheBackoffWhileRunning) {
  RunState state;
  Supervisor s(state, "responder", "responder");
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(s.failed("port taken"));  // the first wait: 1 s
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 1s);
  EXPECT_LT(waited, 5s);
  EXPECT_EQ(state.restarts.load(), 1u);
}
