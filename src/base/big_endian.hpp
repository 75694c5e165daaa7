#pragma once
// Network byte order (big-endian) stores and loads for the wire formats, at any alignment and on
// any host: one unaligned access plus a byte swap (g++ 12 does not fuse a byte-by-byte loop into
// one, and these run several times per packet). The byte loop stays for constant evaluation.
// Standard library only: the fuzz targets build the wire parsers with nothing else.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace weft::be {

namespace detail {
template <typename T>
constexpr T to_big(T v) {
  if constexpr (std::endian::native == std::endian::big || sizeof(T) == 1) {
    return v;
  } else if constexpr (sizeof(T) == 2) {
    return static_cast<T>(__builtin_bswap16(v));
  } else if constexpr (sizeof(T) == 4) {
    return static_cast<T>(__builtin_bswap32(v));
  } else {
    static_assert(sizeof(T) == 8);
    return static_cast<T>(__builtin_bswap64(v));
  }
}
}  // namespace detail

template <typename T>
requires std::is_unsigned_v<T>
constexpr void store(uint8_t* p, T v) {
  if
    consteval {
      for (size_t i = sizeof(T); i-- > 0; v = static_cast<T>(v >> 8)) p[i] = static_cast<uint8_t>(v);
    }
  else {
    const T b = detail::to_big(v);
    std::memcpy(p, &b, sizeof b);
  }
}

template <typename T>
requires std::is_unsigned_v<T>
constexpr T load(const uint8_t* p) {
  if
    consteval {
      T v = 0;
      for (size_t i = 0; i < sizeof(T); ++i) v = static_cast<T>((v << 8) | p[i]);
      return v;
    }
  else {
    T v;
    std::memcpy(&v, p, sizeof v);
    return detail::to_big(v);
  }
}

}  // namespace weft::be
