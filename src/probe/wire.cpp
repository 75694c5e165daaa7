#include "probe/wire.hpp"

namespace weft::probe::wire {

namespace {
void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 3; i >= 0; --i, v >>= 8) p[i] = static_cast<uint8_t>(v);
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 7; i >= 0; --i, v >>= 8) p[i] = static_cast<uint8_t>(v);
}
uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | p[i];
  return v;
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}
}  // namespace

const char* to_string(ParseError e) {
  switch (e) {
    case ParseError::ok: return "ok";
    case ParseError::size: return "bad size";
    case ParseError::magic: return "bad magic";
    case ParseError::version: return "unknown version";
    case ParseError::type: return "unknown type";
    case ParseError::flags: return "bad flags";
    case ParseError::reserved: return "reserved byte set";
    case ParseError::session: return "zero session";
    case ParseError::seq: return "zero sequence";
    case ParseError::times: return "bad times";
  }
  return "unknown";
}

void encode(const Packet& p, std::span<uint8_t, kSize> out) {
  uint8_t* b = out.data();
  put_u32(b, kMagic);
  b[4] = kVersion;
  b[5] = static_cast<uint8_t>(p.type);
  b[6] = p.flags;
  b[7] = 0;
  put_u64(b + 8, p.session);
  put_u64(b + 16, p.seq);
  put_u64(b + 24, static_cast<uint64_t>(p.prober_tx_ns));
  put_u64(b + 32, static_cast<uint64_t>(p.responder_rx_ns));
  put_u64(b + 40, static_cast<uint64_t>(p.responder_tx_ns));
}

ParseError decode(std::span<const uint8_t> in, Packet& out) {
  if (in.size() != kSize) return ParseError::size;
  const uint8_t* b = in.data();
  if (get_u32(b) != kMagic) return ParseError::magic;
  if (b[4] != kVersion) return ParseError::version;
  if (b[5] < 1 || b[5] > 3) return ParseError::type;
  if (b[7] != 0) return ParseError::reserved;
  Packet p;
  p.type = static_cast<Type>(b[5]);
  p.flags = b[6];
  p.session = get_u64(b + 8);
  p.seq = get_u64(b + 16);
  p.prober_tx_ns = static_cast<int64_t>(get_u64(b + 24));
  p.responder_rx_ns = static_cast<int64_t>(get_u64(b + 32));
  p.responder_tx_ns = static_cast<int64_t>(get_u64(b + 40));
  if (p.flags & ~kKnownFlags) return ParseError::flags;
  if (p.session == 0) return ParseError::session;
  if (p.seq == 0) return ParseError::seq;
  if (p.prober_tx_ns <= 0) return ParseError::times;
  switch (p.type) {
    case Type::probe:
      if (p.flags != 0) return ParseError::flags;
      if (p.responder_rx_ns != 0 || p.responder_tx_ns != 0) return ParseError::times;
      break;
    case Type::reply:
      if (p.flags & (kTxKernel | kTxHardware)) return ParseError::flags;  // the reply's tx is user time
      if (p.responder_rx_ns <= 0 || p.responder_tx_ns <= 0) return ParseError::times;
      break;
    case Type::followup:
      if (!(p.flags & (kTxKernel | kTxHardware))) return ParseError::flags;  // its whole point
      if (p.flags & kFollowupComing) return ParseError::flags;
      if (p.responder_rx_ns <= 0 || p.responder_tx_ns <= 0) return ParseError::times;
      break;
  }
  out = p;
  return ParseError::ok;
}

}  // namespace weft::probe::wire
