#pragma once
// The one strict integer parser for text from outside (query parameters, config values): the whole
// text is the number, decimal digits with an optional leading '-' for signed types, nothing else
// (no '+', no spaces, no trailing bytes, not empty) and it must fit in T. A bare std::from_chars
// stops at the first non-digit, so "12abc" would read as 12.
#include <charconv>
#include <concepts>
#include <optional>
#include <string_view>

namespace weft {

template <std::integral T>
std::optional<T> parse_integer(std::string_view text) {
  if (text.empty() || text.front() == '+') return std::nullopt;
  T v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace weft
