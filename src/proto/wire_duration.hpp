#pragma once
// Durations on the agent <-> controller wire (docs/api.md "Durations"): integer nanoseconds in a
// field named NAME_ns, like every time in a report (start_unix_ns, p50_ns...). In memory they are
// base::Duration from the controller's config to the probers; this is the one place that turns
// them into numbers and back.
//
// Before 0.2 the pinglist and the register reply carried them in other units (interval_us,
// timeout_us, window_ms, report_interval_ms, sync_interval_ms) and the released agents' strict
// decoders require those fields. So encoders still write the old field beside the new one, and
// decoders read the old one when NAME_ns is absent (an older controller sends only it). When both
// are there they must agree (the old one is the new one truncated to its unit).
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "base/duration.hpp"
#include "base/result.hpp"

namespace weft::proto {

struct WireDuration {
  const char* name;    // "interval": fields interval_ns and interval_<legacy_suffix>
  const char* legacy;  // the old field's name ("interval_us"); nullptr for a field born in ns
  Duration legacy_unit;
  Duration min;  // the smallest value a decoder accepts (the old form's 1 unit, so no 0)
};

inline constexpr WireDuration kProbeIntervalField{"interval", "interval_us", std::chrono::microseconds(1),
                                                  std::chrono::microseconds(1)};
inline constexpr WireDuration kProbeTimeoutField{"timeout", "timeout_us", std::chrono::microseconds(1),
                                                 std::chrono::microseconds(1)};
inline constexpr WireDuration kWindowField{"window", "window_ms", std::chrono::milliseconds(1),
                                           std::chrono::milliseconds(1)};
inline constexpr WireDuration kReportIntervalField{
    "report_interval", "report_interval_ms", std::chrono::milliseconds(1), std::chrono::milliseconds(1)};
inline constexpr WireDuration kSyncIntervalField{"sync_interval", "sync_interval_ms",
                                                 std::chrono::milliseconds(1), std::chrono::milliseconds(1)};

// Sets obj["NAME_ns"] (and the legacy field, truncated to its unit).
void put_duration(nlohmann::json& obj, const WireDuration& f, Duration d);
// Reads obj["NAME_ns"], else the legacy field; an error names the field ("interval_ns: missing").
Result<Duration> duration_field(const nlohmann::json& obj, const WireDuration& f);

}  // namespace weft::proto
