#include "stack/tcp/syn_cookie.hpp"

#include <cstring>

#include "stack/tcp/isn.hpp"

namespace weft::stack::tcp {

namespace {
constexpr uint32_t kCookieBits = 24;
constexpr uint32_t kCookieMask = (1u << kCookieBits) - 1;
constexpr uint32_t kTsBits = 6;
constexpr uint32_t kTsWscaleNone = 0xf;
constexpr uint32_t kTsSack = 1u << 4;
}  // namespace

uint32_t SynCookies::mss_index(uint16_t mss) {
  uint32_t i = 3;
  while (i > 0 && mss < kCookieMss[i]) --i;
  return i;
}

uint32_t SynCookies::hash(const FourTuple& t, uint32_t count, uint32_t which) const {
  uint8_t b[20];
  std::memcpy(b, &t.local_ip.v, 4);
  std::memcpy(b + 4, &t.remote_ip.v, 4);
  std::memcpy(b + 8, &t.local_port, 2);
  std::memcpy(b + 10, &t.remote_port, 2);
  std::memcpy(b + 12, &count, 4);
  std::memcpy(b + 16, &which, 4);
  // Its own key, apart from the ISN generator's (same secrets, a fixed tweak).
  return static_cast<uint32_t>(siphash24(k0_ ^ 0x636f6f6b69657321ULL, k1_, b, sizeof b));
}

uint32_t SynCookies::make(const FourTuple& t, uint32_t syn_seq, uint32_t mss_index, int64_t now_ns) const {
  const auto count = static_cast<uint32_t>(now_ns / kPeriodNs);
  return hash(t, 0, 0) + syn_seq + (count << kCookieBits) + ((hash(t, count, 1) + mss_index) & kCookieMask);
}

int SynCookies::check(const FourTuple& t, uint32_t syn_seq, uint32_t cookie, int64_t now_ns) const {
  const auto count = static_cast<uint32_t>(now_ns / kPeriodNs);
  cookie -= hash(t, 0, 0) + syn_seq;
  const uint32_t age = (count - (cookie >> kCookieBits)) & (~0u >> kCookieBits);
  if (age >= kMaxAge) return -1;
  const uint32_t index = (cookie - hash(t, count - age, 1)) & kCookieMask;
  return index < 4 ? static_cast<int>(index) : -1;
}

uint32_t SynCookies::ts_encode(uint32_t ts_now, const CookieOptions& o) {
  uint32_t opts = o.wscale_ok ? (o.wscale & 0xfu) : kTsWscaleNone;
  if (o.sack) opts |= kTsSack;
  uint32_t ts = (ts_now >> kTsBits << kTsBits) | opts;
  if (ts > ts_now) ts -= 1u << kTsBits;  // never ahead of the clock the connection goes on with
  return ts;
}

void SynCookies::ts_decode(uint32_t ts_ecr, CookieOptions& o) {
  if (!o.timestamps) {
    o = CookieOptions{};
    return;
  }
  o.sack = (ts_ecr & kTsSack) != 0;
  const uint32_t ws = ts_ecr & 0xfu;
  o.wscale_ok = ws != kTsWscaleNone;
  o.wscale = o.wscale_ok ? static_cast<uint8_t>(ws) : 0;
}

}  // namespace weft::stack::tcp
