#include "proto/report_reply.hpp"

#include <nlohmann/json.hpp>

#include "proto/json_fields.hpp"

namespace weft::proto {

std::string report_reply_json(const ReportReply& r) {
  return nlohmann::json{{"accepted", r.accepted},
                        {"duplicate", r.duplicate},
                        {"stale", r.stale},
                        {"pinglist_version", r.pinglist_version},
                        {"refused", r.refused}}
      .dump();
}

Result<ReportReply> decode_report_reply(std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return fail("report reply: not valid JSON");
  if (!j.is_object()) return fail("report reply: expected a JSON object");
  ReportReply r;
  for (auto [key, field] :
       {std::pair{"accepted", &r.accepted}, std::pair{"duplicate", &r.duplicate},
        std::pair{"stale", &r.stale}, std::pair{"pinglist_version", &r.pinglist_version}}) {
    auto v = unsigned_field(j, key, 0, UINT64_MAX);
    if (!v) return fail("report reply: {}", v.error().message);
    *field = *v;
  }
  if (j.contains("refused")) {
    auto v = unsigned_field(j, "refused", 0, UINT64_MAX);
    if (!v) return fail("report reply: {}", v.error().message);
    r.refused = *v;
  }
  return r;
}

}  // namespace weft::proto
