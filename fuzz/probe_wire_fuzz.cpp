// Fuzzes the probe packet parsers (the 48-byte packet, the follow-ups message and a reply carrying
// one): they must never crash, read out of bounds or accept something that does not survive a round
// trip unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "probe/wire.hpp"

#ifndef WEFT_FUZZ_SEEDGEN
namespace {
// The follow-ups message: accepted means it re-encodes to exactly the same bytes.
int check_followups(const uint8_t* data, size_t size) {
  using namespace weft::probe::wire;
  static Followups f;
  if (decode_followups(std::span<const uint8_t>(data, size), f) != ParseError::ok) return 0;
  if (f.count == 0 || f.count > kMaxFollowups || f.session == 0) std::abort();
  if (size != kFollowupsHeader + f.count * kFollowupsEntry) std::abort();
  uint8_t again[kMaxFollowupsSize];
  if (encode_followups(f, again) != size || std::memcmp(again, data, size) != 0) std::abort();
  for (size_t i = 0; i < f.count; ++i)
    if (f.entries[i].seq == 0 || f.entries[i].responder_rx_ns <= 0 || f.entries[i].responder_tx_ns <= 0)
      std::abort();
  return 0;
}

// A reply carrying follow-ups: accepted means a reply and a follow-ups message of the same session
// that re-encode to exactly the same bytes.
int check_reply_followups(const uint8_t* data, size_t size) {
  using namespace weft::probe::wire;
  static Followups f;
  Packet p;
  if (decode_reply_followups(std::span<const uint8_t>(data, size), p, f) != ParseError::ok) return 0;
  if (p.type != Type::reply || f.session != p.session || f.count == 0 || f.count > kMaxFollowups)
    std::abort();
  if (size != kSize + kFollowupsHeader + f.count * kFollowupsEntry) std::abort();
  uint8_t again[kMaxReplyFollowupsSize];
  if (encode_reply_followups(p, f, again) != size || std::memcmp(again, data, size) != 0) std::abort();
  return 0;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace weft::probe::wire;
  if (is_followups(std::span<const uint8_t>(data, size))) return check_followups(data, size);
  if (is_reply_followups(std::span<const uint8_t>(data, size))) return check_reply_followups(data, size);
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
