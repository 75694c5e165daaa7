#pragma once
// A window's counters by name: the one list every JSON form of a window is written from (the report's
// JSON form, the controller's read API, `weft ping --json`) and the report's JSON decoder reads. A
// counter added to WindowStats is added here once and appears in all of them.
#include <array>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>

#include "proto/window_stats.hpp"

namespace weft::proto {

struct WindowCounter {
  const char* name;
  uint64_t WindowStats::*member;
  bool required;  // in a report's JSON form (the others default to 0: older agents lacked them)
};

inline constexpr std::array<WindowCounter, 7> kWindowCounters{{
    {"sent", &WindowStats::sent, true},
    {"received", &WindowStats::received, true},
    {"lost", &WindowStats::lost, true},
    {"late", &WindowStats::late, false},
    {"duplicate", &WindowStats::duplicate, false},
    {"malformed", &WindowStats::malformed, false},
    {"weird", &WindowStats::weird, false},
}};

// Sets obj[name] for every counter, and obj["timestamp_source"] (how the RTTs were measured, which
// every form reports beside them).
void put_window_counters(nlohmann::json& obj, const WindowStats& w);

}  // namespace weft::proto
