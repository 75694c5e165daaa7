#pragma once
// The controller's answer to an accepted POST /api/v1/report (docs/api.md):
//   {"accepted":..,"duplicate":..,"stale":..,"pinglist_version":..,"refused":..}
// The agent looks at pinglist_version: a new one means "ask for your pinglist now".
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace weft::proto {

struct ReportReply {
  uint64_t accepted = 0;   // windows taken in
  uint64_t duplicate = 0;  // already had them (a resend)
  uint64_t stale = 0;      // older than the history keeps
  uint64_t pinglist_version = 0;
  uint64_t refused = 0;  // to targets the agent was not given (controller/report_policy.hpp)
  bool operator==(const ReportReply&) const = default;
};

std::string report_reply_json(const ReportReply& r);
// Strict: all four fields (refused is optional: older controllers do not send it), unsigned integers, unknown
// keys ignored (a newer controller may add some).
Result<ReportReply> decode_report_reply(std::string_view body);

}  // namespace weft::proto
