#include "probe/rdma/wire.hpp"

#include <algorithm>

#include "base/big_endian.hpp"

namespace weft::probe::rdma_wire {

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
      return "reserved field set";
    case ParseError::session:
      return "zero session";
    case ParseError::seq:
      return "zero sequence";
    case ParseError::address:
      return "bad address";
    case ParseError::delay:
      return "bad delay";
  }
  return "unknown";
}

void encode(const Message& m, std::span<uint8_t, kSize> out) {
  uint8_t* b = out.data();
  std::fill(b, b + kSize, uint8_t{0});
  be::store<uint32_t>(b, kMagic);
  b[4] = kVersion;
  b[5] = static_cast<uint8_t>(m.type);
  b[6] = m.flags;
  be::store<uint64_t>(b + 8, m.session);
  be::store<uint64_t>(b + 16, m.seq);
  std::copy(m.gid.begin(), m.gid.end(), b + 24);
  be::store<uint16_t>(b + 40, m.lid);
  be::store<uint32_t>(b + 44, m.qkey);
  be::store<uint64_t>(b + 48, static_cast<uint64_t>(m.delay_ns));
}

ParseError decode(std::span<const uint8_t> in, Message& out) {
  if (in.size() != kSize) return ParseError::size;
  const uint8_t* b = in.data();
  if (be::load<uint32_t>(b) != kMagic) return ParseError::magic;
  if (b[4] != kVersion) return ParseError::version;
  if (b[5] < 1 || b[5] > 3) return ParseError::type;
  if (b[7] != 0 || be::load<uint16_t>(b + 42) != 0 || be::load<uint64_t>(b + 56) != 0)
    return ParseError::reserved;
  Message m;
  m.type = static_cast<Type>(b[5]);
  m.flags = b[6];
  m.session = be::load<uint64_t>(b + 8);
  m.seq = be::load<uint64_t>(b + 16);
  std::copy(b + 24, b + 40, m.gid.begin());
  m.lid = be::load<uint16_t>(b + 40);
  m.qkey = be::load<uint32_t>(b + 44);
  m.delay_ns = static_cast<int64_t>(be::load<uint64_t>(b + 48));
  if (m.flags & ~(kGlobal | kHardware)) return ParseError::flags;
  if (m.session == 0) return ParseError::session;
  if (m.seq == 0) return ParseError::seq;
  const bool gid_zero = std::all_of(m.gid.begin(), m.gid.end(), [](uint8_t x) { return x == 0; });
  switch (m.type) {
    case Type::ping:
      if (m.flags & kHardware) return ParseError::flags;
      // A reply needs somewhere to go: a GID with the global flag, or a LID without it.
      if ((m.flags & kGlobal) ? gid_zero : (m.lid == 0 || !gid_zero)) return ParseError::address;
      if (m.delay_ns != 0) return ParseError::delay;
      break;
    case Type::pong:
      if (m.flags != 0) return ParseError::flags;
      if (!gid_zero || m.lid != 0 || m.qkey != 0) return ParseError::address;
      if (m.delay_ns != 0) return ParseError::delay;
      break;
    case Type::followup:
      if (m.flags & kGlobal) return ParseError::flags;
      if (!gid_zero || m.lid != 0 || m.qkey != 0) return ParseError::address;
      if (m.delay_ns < 0) return ParseError::delay;
      break;
  }
  out = m;
  return ParseError::ok;
}

}  // namespace weft::probe::rdma_wire
