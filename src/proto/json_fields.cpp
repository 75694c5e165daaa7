#include "proto/json_fields.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace weft::proto {

Result<uint64_t> unsigned_field(const nlohmann::json& obj, const char* key, uint64_t lo, uint64_t hi) {
  auto it = obj.find(key);
  if (it == obj.end()) return fail("{}: missing", key);
  if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0))
    return fail("{}: expected an integer in [{}, {}]", key, lo, hi);
  uint64_t v = it->get<uint64_t>();
  if (v < lo || v > hi) return fail("{}: {} is out of range [{}, {}]", key, v, lo, hi);
  return v;
}

Result<uint64_t> optional_unsigned_field(const nlohmann::json& obj, const char* key, uint64_t lo, uint64_t hi,
                                         uint64_t absent) {
  if (!obj.contains(key)) return absent;
  return unsigned_field(obj, key, lo, hi);
}

Result<std::string> string_field(const nlohmann::json& obj, const char* key, size_t max) {
  auto it = obj.find(key);
  if (it == obj.end()) return fail("{}: missing", key);
  if (!it->is_string()) return fail("{}: expected a string", key);
  const auto& s = it->get_ref<const std::string&>();
  if (s.empty() || s.size() > max) return fail("{}: expected 1 to {} bytes", key, max);
  return s;
}

Status only_keys(const nlohmann::json& obj, std::initializer_list<const char*> allowed) {
  for (const auto& [k, v] : obj.items()) {
    if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return k == a; }))
      return fail("unknown key '{}' (allowed: {})", k.substr(0, 64), fmt::join(allowed, ", "));
  }
  return {};
}

}  // namespace weft::proto
