#pragma once
// The controller's answer to POST /api/v1/register (docs/api.md):
//   {"pinglist_version":..,"report_interval_ms":..,"sync_interval_ms":..,"window_ms":..}
// The agent takes the intervals from it at once, before its first pinglist arrives.
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace weft::proto {

struct RegisterReply {
  uint64_t pinglist_version = 0;
  int64_t report_interval_ns = 0;  // on the wire in milliseconds, as are the other two
  int64_t sync_interval_ns = 0;
  int64_t window_ns = 0;
  bool operator==(const RegisterReply&) const = default;
};

std::string register_reply_json(const RegisterReply& r);
// Strict: all four fields, unsigned integers (durations 1 ms or more), unknown keys ignored (a newer
// controller may add some).
Result<RegisterReply> decode_register_reply(std::string_view body);

}  // namespace weft::proto
