#include "msg/ring_math.hpp"

namespace weft::msg {

Placement place(uint64_t tail, uint64_t len, uint64_t size, bool double_mapped) {
  const uint64_t off = tail % size;
  if (double_mapped || off + len <= size) return {tail, tail + len};
  // Skip to the start of the next lap.
  const uint64_t start = tail + (size - off);
  return {start, start + len};
}

}  // namespace weft::msg
