#pragma once
// Helpers shared by the stack wire fuzzers: a span must lie inside the input it was parsed from.
#include <cstdlib>

#include "stack/wire/types.hpp"

namespace weft::stack::wire::fuzz {

inline void require(bool ok) {
  if (!ok) std::abort();
}

inline void require_inside(Bytes part, const uint8_t* data, size_t size) {
  if (part.empty()) return;
  require(part.data() >= data && part.data() + part.size() <= data + size);
}

}  // namespace weft::stack::wire::fuzz
