#include "msg/test_pattern.hpp"

#include <bit>
#include <cstring>

#include "base/random.hpp"

namespace weft::msg {

namespace {
uint64_t mix(uint64_t seed, uint64_t i) {
  return seed * 0x9e3779b97f4a7c15ull ^ (i + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;
}
}  // namespace

uint32_t pattern_length(uint64_t seed, uint64_t i, uint32_t max) {
  Rng r(mix(seed, i) ^ 0x5151);
  const int bits = std::bit_width(max);  // lengths up to 2^bits - 1 >= max
  const uint64_t cap = std::min<uint64_t>(max, (uint64_t{1} << r.below(static_cast<uint64_t>(bits) + 1)));
  return static_cast<uint32_t>(r.below(cap + 1));
}

void pattern_fill(uint64_t seed, uint64_t i, std::span<std::byte> out) {
  Rng r(mix(seed, i));
  size_t k = 0;
  for (; k + 8 <= out.size(); k += 8) {
    uint64_t v = r.next();
    std::memcpy(out.data() + k, &v, 8);
  }
  if (k < out.size()) {
    uint64_t v = r.next();
    std::memcpy(out.data() + k, &v, out.size() - k);
  }
}

size_t pattern_mismatch(uint64_t seed, uint64_t i, std::span<const std::byte> got) {
  Rng r(mix(seed, i));
  size_t k = 0;
  for (; k + 8 <= got.size(); k += 8) {
    uint64_t v = r.next();
    if (std::memcmp(got.data() + k, &v, 8) != 0) {
      auto* e = reinterpret_cast<const std::byte*>(&v);
      for (size_t j = 0; j < 8; ++j)
        if (got[k + j] != e[j]) return k + j;
    }
  }
  if (k < got.size()) {
    uint64_t v = r.next();
    auto* e = reinterpret_cast<const std::byte*>(&v);
    for (size_t j = 0; k + j < got.size(); ++j)
      if (got[k + j] != e[j]) return k + j;
  }
  return SIZE_MAX;
}

}  // namespace weft::msg
