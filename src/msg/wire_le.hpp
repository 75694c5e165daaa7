#pragma once
// Little-endian field access for the msg wire records (hello, read notice), bounds checked by
// the callers' fixed sizes.
#include <cstddef>
#include <cstdint>
#include <span>

namespace weft::msg::wire {

template <typename T>
void put(std::span<std::byte> w, size_t off, T v) {
  for (size_t i = 0; i < sizeof(T); ++i)
    w[off + i] = static_cast<std::byte>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
}

template <typename T>
T get(std::span<const std::byte> b, size_t off) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(b[off + i]) << (8 * i);
  return static_cast<T>(v);
}

}  // namespace weft::msg::wire
