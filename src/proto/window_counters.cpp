#include "proto/window_counters.hpp"

#include <nlohmann/json.hpp>

namespace weft::proto {

void put_window_counters(nlohmann::json& obj, const WindowStats& w) {
  for (const auto& c : kWindowCounters) obj[c.name] = w.*c.member;
  obj["timestamp_source"] = to_string(w.timestamp_source);
}

}  // namespace weft::proto
