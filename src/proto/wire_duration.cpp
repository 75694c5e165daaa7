#include "proto/wire_duration.hpp"

#include <limits>
#include <nlohmann/json.hpp>

#include "proto/json_fields.hpp"

namespace weft::proto {

namespace {
std::string ns_key(const WireDuration& f) { return std::string(f.name) + "_ns"; }
constexpr uint64_t kMaxNs = std::numeric_limits<int64_t>::max();
}  // namespace

void put_duration(nlohmann::json& obj, const WireDuration& f, Duration d) {
  obj[ns_key(f)] = d.count();
  if (f.legacy) obj[f.legacy] = d / f.legacy_unit;
}

Result<Duration> duration_field(const nlohmann::json& obj, const WireDuration& f) {
  const std::string key = ns_key(f);
  const auto unit = static_cast<uint64_t>(f.legacy_unit.count());
  if (!obj.contains(key) && f.legacy && obj.contains(f.legacy)) {  // an older controller's form
    const uint64_t lo = (static_cast<uint64_t>(f.min.count()) + unit - 1) / unit;
    auto old = unsigned_field(obj, f.legacy, lo, kMaxNs / unit);
    if (!old) return unexpected(old.error());
    return Duration(static_cast<int64_t>(*old * unit));
  }
  auto ns = unsigned_field(obj, key.c_str(), static_cast<uint64_t>(f.min.count()), kMaxNs);
  if (!ns) return unexpected(ns.error());
  const Duration d(static_cast<int64_t>(*ns));
  if (f.legacy && obj.contains(f.legacy)) {
    const uint64_t want = *ns / unit;
    auto old = unsigned_field(obj, f.legacy, want, want);
    if (!old) return fail("{}: {} disagrees with {} ({})", f.legacy, obj.at(f.legacy).dump(), key, *ns);
  }
  return d;
}

}  // namespace weft::proto
