#pragma once
// Little-endian stores and loads at any alignment and on any host, for the records weft defines
// little-endian (the RDMA endpoint info, the msg hello and read notices, the rdma-bench
// parameters, the side channel's length prefix). They run once per connection or message set-up,
// not per packet, so a byte loop is enough (base/big_endian.hpp is the per-packet network order).
// Standard library only, like big_endian.hpp.
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace weft::le {

template <typename T>
requires std::is_unsigned_v<T>
constexpr void store(uint8_t* p, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i));
}

template <typename T>
requires std::is_unsigned_v<T>
constexpr T load(const uint8_t* p) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return static_cast<T>(v);
}

template <typename T>
requires std::is_unsigned_v<T>
void store(std::byte* p, T v) { store<T>(reinterpret_cast<uint8_t*>(p), v); }

template <typename T>
requires std::is_unsigned_v<T> T load(const std::byte* p) {
  return load<T>(reinterpret_cast<const uint8_t*>(p));
}

}  // namespace weft::le
