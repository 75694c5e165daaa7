#pragma once
// Network byte order (big-endian) stores and loads for the wire formats. Byte by byte, so they
// work at any alignment and on any host; compilers turn each into one byte-swapped access.
// Standard library only: the fuzz targets build the wire parsers with nothing else.
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace weft::be {

template <typename T>
requires std::is_unsigned_v<T>
constexpr void store(uint8_t* p, T v) {
  for (size_t i = sizeof(T); i-- > 0; v = static_cast<T>(v >> 8)) p[i] = static_cast<uint8_t>(v);
}

template <typename T>
requires std::is_unsigned_v<T>
constexpr T load(const uint8_t* p) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v = static_cast<T>((v << 8) | p[i]);
  return v;
}

}  // namespace weft::be
