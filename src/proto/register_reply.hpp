#pragma once
// The controller's answer to POST /api/v1/register (docs/api.md):
//   {"pinglist_version":..,"report_interval_ns":..,"sync_interval_ns":..,"window_ns":..}
// (plus the durations' pre-0.2 *_ms forms, wire_duration.hpp).
// The agent takes the intervals from it at once, before its first pinglist arrives.
#include <cstdint>
#include <string>
#include <string_view>

#include "base/duration.hpp"
#include "base/result.hpp"

namespace weft::proto {

struct RegisterReply {
  uint64_t pinglist_version = 0;
  Duration report_interval{};
  Duration sync_interval{};
  Duration window{};
  bool operator==(const RegisterReply&) const = default;
};

std::string register_reply_json(const RegisterReply& r);
// Strict: all four fields, unsigned integers (durations 1 ms or more, in either form), unknown keys
// ignored (a newer controller may add some).
Result<RegisterReply> decode_register_reply(std::string_view body);

}  // namespace weft::proto
