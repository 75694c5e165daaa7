#pragma once
// weft's one duration type and its one text form. Durations are std::chrono::nanoseconds from the
// config file to the wire; they become plain integers only where a format needs them (the
// pinglist's microseconds, a window's unix nanoseconds) and in hot loops that do arithmetic on
// monotonic clock readings.
#include <chrono>
#include <string_view>

#include "base/result.hpp"

namespace weft {

using Duration = std::chrono::nanoseconds;

// "250us", "100ms", "10s", "5m", "2h", "7d" -> Duration: digits then one unit, no sign, no
// fraction, no space; an error names the text when it is not one or does not fit in 64 bits.
Result<Duration> parse_duration(std::string_view text);

}  // namespace weft
