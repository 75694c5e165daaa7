#pragma once
// SYN cookies (RFC 4987 3.6) with Linux's encoding (net/ipv4/syncookies.c, read, not copied): when
// a listener's SYN queue is full, the SYN-ACK's ISS carries what the half-open entry would have
// held, and nothing is kept. The ACK that completes the handshake proves the peer received it
// (ACK - 1 is a cookie this stack made for that 4-tuple and SYN sequence number within the last
// two 64-second periods), and the connection is made from the ACK.
//
// ISS = H0(tuple) + SEQ_syn + (count << 24) + ((H1(tuple, count) + mss_index) mod 2^24), with
// count = now / 64 s, H keyed SipHash-2-4, mss_index into Linux's table {536, 1300, 1440, 1460}.
// With timestamps, the SYN-ACK's TSval carries the options in its 6 low bits as Linux does: the
// peer's window scale (0-14; 15 = none) in bits 0-3, SACK-permitted in bit 4, ECN in bit 5 (never
// set: this stack does not negotiate ECN); the ACK's TSecr gives them back. Without timestamps
// only the MSS survives (no window scaling, no SACK), as in Linux.
#include <cstdint>

#include "stack/tcp/connection.hpp"

namespace weft::stack::tcp {

inline constexpr uint16_t kCookieMss[4] = {536, 1300, 1440, 1460};

// What the cookie carries back besides the MSS.
struct CookieOptions {
  bool timestamps = false;
  bool sack = false;
  bool wscale_ok = false;
  uint8_t wscale = 0;  // the peer's
};

class SynCookies {
 public:
  SynCookies(uint64_t k0, uint64_t k1) : k0_(k0), k1_(k1) {}

  // The index of the largest table MSS not above the peer's `mss`.
  static uint32_t mss_index(uint16_t mss);
  // The ISS for a SYN on `t` (local first) with sequence number `syn_seq`.
  uint32_t make(const FourTuple& t, uint32_t syn_seq, uint32_t mss_index, int64_t now_ns) const;
  // The MSS index a cookie carries, or -1 when `cookie` is not one made for `t` and `syn_seq`
  // in the last two periods.
  int check(const FourTuple& t, uint32_t syn_seq, uint32_t cookie, int64_t now_ns) const;

  // TSval for the SYN-ACK: `ts_now` with its 6 low bits replaced by the options, never above
  // ts_now (so the connection's later timestamps do not go back).
  static uint32_t ts_encode(uint32_t ts_now, const CookieOptions& o);
  // The options from the ACK's TSecr (`o.timestamps` must be set by the caller when the ACK
  // carried timestamps; without them only the MSS is known).
  static void ts_decode(uint32_t ts_ecr, CookieOptions& o);

  static constexpr int64_t kPeriodNs = 64'000'000'000;  // Linux: 60 * HZ jiffies, about 64 s
  static constexpr uint32_t kMaxAge = 2;                // periods a cookie stays valid (MAX_SYNCOOKIE_AGE)

 private:
  uint32_t hash(const FourTuple& t, uint32_t count, uint32_t which) const;
  uint64_t k0_, k1_;
};

}  // namespace weft::stack::tcp
