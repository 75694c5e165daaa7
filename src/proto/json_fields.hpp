#pragma once
// Strict field readers shared by the protocol's JSON decoders (pinglist, replies, RDMA endpoint):
// one rule for what "an unsigned integer in [lo, hi]" or "no unknown keys" means, and one wording
// of the errors ("qpn: 0 is out of range [2, 16777215]"). Callers add where the object was.
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "base/result.hpp"

namespace weft::proto {

// obj[key], an integer in [lo, hi] (JSON has one number type: a non-negative integer is accepted
// however the parser typed it; floats, strings and booleans are not).
Result<uint64_t> unsigned_field(const nlohmann::json& obj, const char* key, uint64_t lo, uint64_t hi);
// As unsigned_field, but absent gives `absent`.
Result<uint64_t> optional_unsigned_field(const nlohmann::json& obj, const char* key, uint64_t lo, uint64_t hi,
                                         uint64_t absent);
// obj[key], a string of 1 to max bytes.
Result<std::string> string_field(const nlohmann::json& obj, const char* key, size_t max);
// An error for the first key of obj not in `allowed` (lists them).
Status only_keys(const nlohmann::json& obj, std::initializer_list<const char*> allowed);

}  // namespace weft::proto
