// libFuzzer target for the RDMA probe wire format (built with -DWEFT_FUZZ=ON and clang):
// the parser never crashes, and whatever it accepts re-encodes to exactly the input bytes.
#include <cstdlib>
#include <cstring>

#include "probe/rdma/wire.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace w = weft::probe::rdma_wire;
  w::Message m;
  if (w::decode(std::span<const uint8_t>(data, size), m) != w::ParseError::ok) return 0;
  uint8_t out[w::kSize];
  w::encode(m, std::span<uint8_t, w::kSize>(out, w::kSize));
  if (size != w::kSize || std::memcmp(out, data, w::kSize) != 0) std::abort();
  return 0;
}
