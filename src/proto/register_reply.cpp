#include "proto/register_reply.hpp"

#include <nlohmann/json.hpp>

#include "proto/json_fields.hpp"

namespace weft::proto {

std::string register_reply_json(const RegisterReply& r) {
  return nlohmann::json{{"pinglist_version", r.pinglist_version},
                        {"report_interval_ms", r.report_interval_ns / 1'000'000},
                        {"sync_interval_ms", r.sync_interval_ns / 1'000'000},
                        {"window_ms", r.window_ns / 1'000'000}}
      .dump();
}

Result<RegisterReply> decode_register_reply(std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return fail("register reply: not valid JSON");
  if (!j.is_object()) return fail("register reply: expected a JSON object");
  RegisterReply r;
  auto version = unsigned_field(j, "pinglist_version", 0, UINT64_MAX);
  if (!version) return fail("register reply: {}", version.error().message);
  r.pinglist_version = *version;
  for (auto [key, field] :
       {std::pair{"report_interval_ms", &r.report_interval_ns},
        std::pair{"sync_interval_ms", &r.sync_interval_ns}, std::pair{"window_ms", &r.window_ns}}) {
    auto ms = unsigned_field(j, key, 1, INT64_MAX / 1'000'000);
    if (!ms) return fail("register reply: {}", ms.error().message);
    *field = static_cast<int64_t>(*ms) * 1'000'000;
  }
  return r;
}

}  // namespace weft::proto
