#pragma once
// Initial sequence numbers as RFC 6528 asks: ISN = M + F(local ip/port, remote ip/port, secret),
// M a clock ticking every 4 microseconds, F SipHash-2-4 keyed with a per-stack random secret, so
// off-path attackers cannot predict ISNs and a reused 4-tuple still moves forward.
#include <cstdint>

#include "stack/tcp/connection.hpp"

namespace weft::stack::tcp {

// SipHash-2-4 (Aumasson and Bernstein) of `len` bytes under the 128-bit key (k0, k1).
uint64_t siphash24(uint64_t k0, uint64_t k1, const uint8_t* data, size_t len);

class IsnGenerator {
 public:
  IsnGenerator(uint64_t k0, uint64_t k1) : k0_(k0), k1_(k1) {}
  uint32_t isn(const FourTuple& t, int64_t now_ns) const;

 private:
  uint64_t k0_, k1_;
};

}  // namespace weft::stack::tcp
