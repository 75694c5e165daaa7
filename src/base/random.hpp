#pragma once
// A small, fast, non-cryptographic generator (xoshiro256**) for jitter and schedules, seeded from
// the kernel (getrandom) so that hosts do not share a sequence. Session identifiers use
// random_u64() directly from the kernel.
#include <sys/random.h>

#include <cstdint>

namespace weft {

// 64 random bits from the kernel; falls back to a clock mix only if getrandom fails.
uint64_t random_u64();

class Rng {
 public:
  explicit Rng(uint64_t seed);
  Rng() : Rng(random_u64()) {}

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, n) for n > 0 (Lemire's multiply-shift; the tiny bias does not matter here).
  uint64_t below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  // Uniform in [-a, a].
  int64_t symmetric(int64_t a) {
    if (a <= 0) return 0;
    return static_cast<int64_t>(below(static_cast<uint64_t>(2 * a + 1))) - a;
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace weft
