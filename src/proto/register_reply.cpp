#include "proto/register_reply.hpp"

#include <nlohmann/json.hpp>

#include "proto/json_fields.hpp"
#include "proto/wire_duration.hpp"

namespace weft::proto {

std::string register_reply_json(const RegisterReply& r) {
  nlohmann::json j{{"pinglist_version", r.pinglist_version}};
  put_duration(j, kReportIntervalField, r.report_interval);
  put_duration(j, kSyncIntervalField, r.sync_interval);
  put_duration(j, kWindowField, r.window);
  return j.dump();
}

Result<RegisterReply> decode_register_reply(std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return fail("register reply: not valid JSON");
  if (!j.is_object()) return fail("register reply: expected a JSON object");
  RegisterReply r;
  auto version = unsigned_field(j, "pinglist_version", 0, UINT64_MAX);
  if (!version) return fail("register reply: {}", version.error().message);
  r.pinglist_version = *version;
  for (auto [f, field] :
       {std::pair{&kReportIntervalField, &r.report_interval},
        std::pair{&kSyncIntervalField, &r.sync_interval}, std::pair{&kWindowField, &r.window}}) {
    auto d = duration_field(j, *f);
    if (!d) return fail("register reply: {}", d.error().message);
    *field = *d;
  }
  return r;
}

}  // namespace weft::proto
