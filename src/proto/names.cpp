#include "proto/names.hpp"

#include <array>
#include <cstdint>

namespace weft::proto {
namespace {

// One table, one bit per rule: a character is allowed by a rule when its bit is set.
enum : uint8_t { kPlain = 1, kHost = 2, kPattern = 4 };

constexpr std::array<uint8_t, 256> kNameChars = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_' || c == '.';
    if (plain) t[c] = kPlain | kHost | kPattern;
    if (c == ':' || c == '[' || c == ']') t[c] |= kHost;
    if (c == '*' || c == '?') t[c] |= kPattern;
  }
  return t;
}();

bool all_in(std::string_view s, size_t max, uint8_t rule) {
  if (s.empty() || s.size() > max) return false;
  uint8_t ok = rule;
  for (char ch : s) ok &= kNameChars[static_cast<unsigned char>(ch)];  // no early exit: no branch per byte
  return ok != 0;
}

}  // namespace

bool valid_host_name(std::string_view s) { return all_in(s, kMaxNameLength, kHost); }
bool valid_host_pattern(std::string_view s) { return all_in(s, kMaxNameLength, kPattern); }
bool valid_plain_name(std::string_view s) { return all_in(s, kMaxNameLength, kPlain); }
bool valid_device_name(std::string_view s) { return all_in(s, kMaxDeviceNameLength, kPlain); }

}  // namespace weft::proto
