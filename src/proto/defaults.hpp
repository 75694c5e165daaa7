#pragma once
// The mesh monitor's default timing, written once: the controller's config starts from these and
// sends them to the agents (pinglist, register reply); the agent and the probe engines use them
// until their first pinglist arrives, and `weft ping` when not told otherwise. proto is the
// lowest layer that all of them (controller, agent, probe) include.
#include "base/duration.hpp"

namespace weft::proto::defaults {

using namespace std::chrono_literals;

inline constexpr Duration kWindow = 10s;           // one window of probe results per target
inline constexpr Duration kProbeInterval = 100ms;  // between two probes to one target
inline constexpr Duration kProbeTimeout = 1s;      // a probe unanswered this long is lost
inline constexpr Duration kReportInterval = 1s;    // how often an agent sends what it has
inline constexpr Duration kPinglistSync = 10s;     // how often an agent re-checks its pinglist

}  // namespace weft::proto::defaults
