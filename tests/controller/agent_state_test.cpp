// agent_state (controller/agent_state.hpp): what one replica tells the others of an agent's report
// reads back the same, and a malformed entry is refused rather than read as zeros.
#include "controller/agent_state.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace weft::controller {
namespace {

TEST(AgentState, HealthAndAlarmsReadBackTheSame) {
  proto::Health h{12.5, 15232, 39.98, 3, 7, 1};
  std::vector<proto::AlarmEvent> alarms{
      {"prober_restarted", "udp prober \"x\" restarted", 1795842754031290000}};
  auto s = parse_agent_state(agent_state_json(h, alarms));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->health.cpu_percent, 12.5);
  EXPECT_EQ(s->health.rss_kb, 15232u);
  EXPECT_EQ(s->health.probes_per_s, 39.98);
  EXPECT_EQ(s->health.dropped_windows, 3u);
  EXPECT_EQ(s->health.spooled_windows, 7u);
  EXPECT_EQ(s->health.prober_restarts, 1u);
  ASSERT_EQ(s->alarms.size(), 1u);
  EXPECT_EQ(s->alarms[0].kind, "prober_restarted");
  EXPECT_EQ(s->alarms[0].message, "udp prober \"x\" restarted");
  EXPECT_EQ(s->alarms[0].unix_ns, 1795842754031290000);
}

TEST(AgentState, MalformedIsRefused) {
  EXPECT_FALSE(parse_agent_state(""));
  EXPECT_FALSE(parse_agent_state("{\"h\":[1,2,3],\"a\":[]}"));
  EXPECT_FALSE(parse_agent_state("{\"h\":[1,2,3,4,5,\"x\"],\"a\":[]}"));
  EXPECT_FALSE(parse_agent_state("{\"h\":[1,2,3,4,5,6],\"a\":[[\"k\",\"m\"]]}"));
  EXPECT_TRUE(parse_agent_state("{\"h\":[1,2,3,4,5,6],\"a\":[]}"));
}

}  // namespace
}  // namespace weft::controller
