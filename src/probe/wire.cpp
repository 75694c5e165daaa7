#include "probe/wire.hpp"

#include "base/big_endian.hpp"

namespace weft::probe::wire {

namespace {
void put_u32(uint8_t* p, uint32_t v) { be::store(p, v); }
void put_u64(uint8_t* p, uint64_t v) { be::store(p, v); }
uint32_t get_u32(const uint8_t* p) { return be::load<uint32_t>(p); }
uint64_t get_u64(const uint8_t* p) { return be::load<uint64_t>(p); }

// The timestamp sources a follow-up may name, and the one it must name.
constexpr uint8_t kFollowupFlags = kRxKernel | kRxHardware | kTxKernel | kTxHardware;
}  // namespace

const char* to_string(ParseError e) {
  switch (e) {
    case ParseError::ok:
      return "ok";
    case ParseError::size:
      return "bad size";
    case ParseError::magic:
      return "bad magic";
    case ParseError::version:
      return "unknown version";
    case ParseError::type:
      return "unknown type";
    case ParseError::flags:
      return "bad flags";
    case ParseError::reserved:
      return "reserved byte set";
    case ParseError::session:
      return "zero session";
    case ParseError::seq:
      return "zero sequence";
    case ParseError::times:
      return "bad times";
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
  if (b[5] < 1 || b[5] > 3) return ParseError::type;  // follow-ups (4) never have this size
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
    case Type::followups:
      return ParseError::type;  // has its own size and parser
  }
  out = p;
  return ParseError::ok;
}

bool is_followups(std::span<const uint8_t> in) {
  return in.size() >= 6 && get_u32(in.data()) == kMagic && in[5] == static_cast<uint8_t>(Type::followups);
}

size_t encode_followups(const Followups& f, std::span<uint8_t> out) {
  const size_t n = f.count;
  const size_t size = kFollowupsHeader + n * kFollowupsEntry;
  if (n == 0 || n > kMaxFollowups || out.size() < size) return 0;
  uint8_t* b = out.data();
  put_u32(b, kMagic);
  b[4] = kVersion;
  b[5] = static_cast<uint8_t>(Type::followups);
  b[6] = f.flags;
  b[7] = static_cast<uint8_t>(n);
  put_u64(b + 8, f.session);
  for (size_t i = 0; i < n; ++i) {
    uint8_t* e = b + kFollowupsHeader + i * kFollowupsEntry;
    put_u64(e, f.entries[i].seq);
    put_u64(e + 8, static_cast<uint64_t>(f.entries[i].responder_rx_ns));
    put_u64(e + 16, static_cast<uint64_t>(f.entries[i].responder_tx_ns));
  }
  return size;
}

ParseError decode_followups(std::span<const uint8_t> in, Followups& out) {
  if (in.size() < kFollowupsHeader + kFollowupsEntry || in.size() > kMaxFollowupsSize)
    return ParseError::size;
  const uint8_t* b = in.data();
  if (get_u32(b) != kMagic) return ParseError::magic;
  if (b[4] != kVersion) return ParseError::version;
  if (b[5] != static_cast<uint8_t>(Type::followups)) return ParseError::type;
  const size_t n = b[7];
  if (n == 0 || n > kMaxFollowups || in.size() != kFollowupsHeader + n * kFollowupsEntry)
    return ParseError::size;
  const uint8_t flags = b[6];
  if ((flags & ~kFollowupFlags) || !(flags & (kTxKernel | kTxHardware))) return ParseError::flags;
  const uint64_t session = get_u64(b + 8);
  if (session == 0) return ParseError::session;
  for (size_t i = 0; i < n; ++i) {  // validate everything before touching `out`
    const uint8_t* e = b + kFollowupsHeader + i * kFollowupsEntry;
    if (get_u64(e) == 0) return ParseError::seq;
    if (static_cast<int64_t>(get_u64(e + 8)) <= 0 || static_cast<int64_t>(get_u64(e + 16)) <= 0)
      return ParseError::times;
  }
  out.flags = flags;
  out.count = static_cast<uint8_t>(n);
  out.session = session;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* e = b + kFollowupsHeader + i * kFollowupsEntry;
    out.entries[i] = {get_u64(e), static_cast<int64_t>(get_u64(e + 8)),
                      static_cast<int64_t>(get_u64(e + 16))};
  }
  return ParseError::ok;
}

bool is_reply_followups(std::span<const uint8_t> in) {
  return in.size() > kSize && get_u32(in.data()) == kMagic && in[5] == static_cast<uint8_t>(Type::reply);
}

size_t encode_reply_followups(const Packet& p, const Followups& f, std::span<uint8_t> out) {
  if (p.type != Type::reply || f.session != p.session || out.size() < kSize) return 0;
  const size_t n = encode_followups(f, out.subspan(kSize));
  if (n == 0) return 0;
  encode(p, std::span<uint8_t, kSize>(out.data(), kSize));
  return kSize + n;
}

ParseError decode_reply_followups(std::span<const uint8_t> in, Packet& p, Followups& f) {
  if (in.size() <= kSize || in.size() > kMaxReplyFollowupsSize) return ParseError::size;
  Packet reply;
  if (const ParseError e = decode(in.first(kSize), reply); e != ParseError::ok) return e;
  if (reply.type != Type::reply) return ParseError::type;
  // The sessions are compared first: decode_followups writes `f` only when it accepts.
  if (in.size() >= kSize + kFollowupsHeader && get_u64(in.data() + kSize + 8) != reply.session &&
      is_followups(in.subspan(kSize)))
    return ParseError::session;
  if (const ParseError e = decode_followups(in.subspan(kSize), f); e != ParseError::ok) return e;
  p = reply;
  return ParseError::ok;
}

}  // namespace weft::probe::wire
