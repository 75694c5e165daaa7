#include "base/duration.hpp"

#include <cctype>
#include <charconv>
#include <cstdint>
#include <limits>

namespace weft {

Result<Duration> parse_duration(std::string_view t) {
  size_t i = 0;
  while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
  if (i == 0) return fail("'{}' is not a duration (e.g. 100ms, 10s, 5m, 2h, 7d)", t);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + i, v);
  if (ec != std::errc{} || p != t.data() + i) return fail("'{}' is out of range", t);
  const std::string_view unit = t.substr(i);
  int64_t mul = 0;
  if (unit == "us")
    mul = 1'000;
  else if (unit == "ms")
    mul = 1'000'000;
  else if (unit == "s")
    mul = 1'000'000'000;
  else if (unit == "m")
    mul = 60'000'000'000;
  else if (unit == "h")
    mul = 3'600'000'000'000;
  else if (unit == "d")
    mul = 86'400'000'000'000;
  else
    return fail("'{}' has no valid unit (us, ms, s, m, h, d)", t);
  if (v > std::numeric_limits<int64_t>::max() / mul) return fail("'{}' is out of range", t);
  return Duration(v * mul);
}

}  // namespace weft
