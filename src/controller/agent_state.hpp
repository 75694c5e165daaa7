#pragma once
// What an agent says of itself in a report (its health and the alarms it raises), as the replica
// that took the report tells the others through the replica feed (redis_feed.hpp), so every
// replica's /api/v1/agents and weft_agent_* series read the same (docs/store-redis.md).
// A small JSON object: {"h":[cpu_percent, rss_kb, probes_per_s, dropped, spooled, restarts],
// "a":[[kind, message, unix_ns], ...]}.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "proto/report.hpp"

namespace weft::controller {

struct AgentReportedState {
  proto::Health health;
  std::vector<proto::AlarmEvent> alarms;
};

std::string agent_state_json(const proto::Health& health, std::span<const proto::AlarmEvent> alarms);
Result<AgentReportedState> parse_agent_state(std::string_view json);

}  // namespace weft::controller
