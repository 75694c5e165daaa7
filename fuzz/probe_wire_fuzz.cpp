// Fuzzes the probe packet parser: it must never crash, read out of bounds or accept something
// that does not survive an encode/decode round trip unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "probe/wire.hpp"

#ifndef WEFT_FUZZ_SEEDGEN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace weft::probe::wire;
  Packet p;
  if (decode(std::span<const uint8_t>(data, size), p) != ParseError::ok) return 0;
  // Accepted: it is exactly one packet, and re-encoding gives back the same bytes.
  if (size != kSize) std::abort();
  uint8_t again[kSize];
  encode(p, std::span<uint8_t, kSize>(again, kSize));
  if (std::memcmp(again, data, kSize) != 0) std::abort();
  Packet q;
  if (decode(std::span<const uint8_t>(again, kSize), q) != ParseError::ok) std::abort();
  if (q.seq != p.seq || q.session != p.session || q.flags != p.flags || q.type != p.type) std::abort();
  if (p.session == 0 || p.seq == 0 || p.prober_tx_ns <= 0 || (p.flags & ~kKnownFlags)) std::abort();
  return 0;
}
#endif
