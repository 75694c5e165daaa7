#include "controller/agent_state.hpp"

#include <nlohmann/json.hpp>

namespace weft::controller {

std::string agent_state_json(const proto::Health& h, std::span<const proto::AlarmEvent> alarms) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& e : alarms) a.push_back({e.kind, e.message, e.unix_ns});
  return nlohmann::json{
      {"h",
       {h.cpu_percent, h.rss_kb, h.probes_per_s, h.dropped_windows, h.spooled_windows, h.prober_restarts}},
      {"a", std::move(a)}}
      .dump();
}

Result<AgentReportedState> parse_agent_state(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("h") || !j["h"].is_array() || j["h"].size() != 6 || !j.contains("a") ||
      !j["a"].is_array())
    return fail("agent state: not {{\"h\":[6 numbers],\"a\":[...]}}");
  const auto& h = j["h"];
  for (const auto& v : h)
    if (!v.is_number()) return fail("agent state: health values must be numbers");
  AgentReportedState s;
  s.health = {h[0].get<double>(),   h[1].get<uint64_t>(), h[2].get<double>(),
              h[3].get<uint64_t>(), h[4].get<uint64_t>(), h[5].get<uint64_t>()};
  for (const auto& e : j["a"]) {
    if (!e.is_array() || e.size() != 3 || !e[0].is_string() || !e[1].is_string() || !e[2].is_number_integer())
      return fail("agent state: an alarm must be [kind, message, unix_ns]");
    s.alarms.push_back({e[0].get<std::string>(), e[1].get<std::string>(), e[2].get<int64_t>()});
  }
  return s;
}

}  // namespace weft::controller
