#include "stack/tcp/isn.hpp"

#include <bit>
#include <cstring>

#include "base/little_endian.hpp"

namespace weft::stack::tcp {

namespace {
struct Sip {
  uint64_t v0, v1, v2, v3;
  void round() {
    v0 += v1;
    v1 = std::rotl(v1, 13);
    v1 ^= v0;
    v0 = std::rotl(v0, 32);
    v2 += v3;
    v3 = std::rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = std::rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = std::rotl(v1, 17);
    v1 ^= v2;
    v2 = std::rotl(v2, 32);
  }
  void block(uint64_t m) {
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  }
};

}  // namespace

uint64_t siphash24(uint64_t k0, uint64_t k1, const uint8_t* data, size_t len) {
  Sip s{k0 ^ 0x736f6d6570736575ULL, k1 ^ 0x646f72616e646f6dULL, k0 ^ 0x6c7967656e657261ULL,
        k1 ^ 0x7465646279746573ULL};
  size_t i = 0;
  for (; i + 8 <= len; i += 8) s.block(le::load<uint64_t>(data + i));
  // The last 0-7 bytes, zero-padded, under the length's low byte.
  uint8_t tail[8] = {};
  if (len > i) std::memcpy(tail, data + i, len - i);
  s.block((uint64_t{len & 0xff} << 56) | le::load<uint64_t>(tail));
  s.v2 ^= 0xff;
  for (int r = 0; r < 4; ++r) s.round();
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

uint32_t IsnGenerator::isn(const FourTuple& t, int64_t now_ns) const {
  uint8_t b[12];
  std::memcpy(b, &t.local_ip.v, 4);
  std::memcpy(b + 4, &t.remote_ip.v, 4);
  std::memcpy(b + 8, &t.local_port, 2);
  std::memcpy(b + 10, &t.remote_port, 2);
  const auto m = static_cast<uint32_t>(now_ns / 4000);  // RFC 6528: a 4 microsecond timer
  return m + static_cast<uint32_t>(siphash24(k0_, k1_, b, sizeof b));
}

}  // namespace weft::stack::tcp
