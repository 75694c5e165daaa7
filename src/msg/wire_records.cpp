#include "msg/wire_records.hpp"

#include <cstring>

#include "base/little_endian.hpp"

namespace weft::msg::wire {

const char* describe(ParseError e) {
  switch (e) {
    case ParseError::ok:
      return "ok";
    case ParseError::size:
      return "wrong size";
    case ParseError::magic:
      return "bad magic (not a weft msg peer?)";
    case ParseError::version:
      return "unknown version";
    case ParseError::kind:
      return "unknown connection type";
    case ParseError::qpn:
      return "QPN/PSN wider than 24 bits";
    case ParseError::reserved:
      return "reserved bytes not zero";
    case ParseError::sequence:
      return "not the sequence number expected";
    case ParseError::offset:
      return "not the slot the sequence number maps to";
    case ParseError::length:
      return "longer than a slot";
    case ParseError::slots:
      return "no slots";
  }
  return "?";
}

namespace {
void put_buf(std::span<std::byte> w, size_t off, const Buf& b) {
  le::store<uint64_t>(w.data() + off, b.addr);
  le::store<uint32_t>(w.data() + off + 8, b.rkey);
  le::store<uint32_t>(w.data() + off + 12, b.length);
}
Buf get_buf(std::span<const std::byte> b, size_t off) {
  return {le::load<uint64_t>(b.data() + off), le::load<uint32_t>(b.data() + off + 8),
          le::load<uint32_t>(b.data() + off + 12)};
}
}  // namespace

// Layout: magic 0, version 4, kind 6, max_message 8, slots 12, ring_bytes 16, qpn 24, psn 28,
// lid 32, gid 40..56, inbox 56, outbox 72, ctrl 88 (addr 8, rkey 4, length 4 each), zero to 112.
void encode_hello(const HelloFields& h, std::span<std::byte, kHelloSize> w) {
  std::memset(w.data(), 0, w.size());
  le::store<uint32_t>(w.data(), kHelloMagic);
  le::store<uint16_t>(w.data() + 4, kHelloVersion);
  le::store<uint8_t>(w.data() + 6, h.kind);
  le::store<uint32_t>(w.data() + 8, h.max_message);
  le::store<uint32_t>(w.data() + 12, h.slots);
  le::store<uint64_t>(w.data() + 16, h.ring_bytes);
  le::store<uint32_t>(w.data() + 24, h.qpn);
  le::store<uint32_t>(w.data() + 28, h.psn);
  le::store<uint16_t>(w.data() + 32, h.lid);
  std::memcpy(w.data() + 40, h.gid, 16);
  put_buf(w, 56, h.inbox);
  put_buf(w, 72, h.outbox);
  put_buf(w, 88, h.ctrl);
}

ParseError decode_hello(std::span<const std::byte> b, HelloFields& h) {
  if (b.size() != kHelloSize) return ParseError::size;
  if (le::load<uint32_t>(b.data()) != kHelloMagic) return ParseError::magic;
  if (le::load<uint16_t>(b.data() + 4) != kHelloVersion) return ParseError::version;
  h.kind = le::load<uint8_t>(b.data() + 6);
  if (h.kind == 0 || h.kind > kMaxKind) return ParseError::kind;
  h.max_message = le::load<uint32_t>(b.data() + 8);
  h.slots = le::load<uint32_t>(b.data() + 12);
  h.ring_bytes = le::load<uint64_t>(b.data() + 16);
  h.qpn = le::load<uint32_t>(b.data() + 24);
  h.psn = le::load<uint32_t>(b.data() + 28);
  h.lid = le::load<uint16_t>(b.data() + 32);
  std::memcpy(h.gid, b.data() + 40, 16);
  h.inbox = get_buf(b, 56);
  h.outbox = get_buf(b, 72);
  h.ctrl = get_buf(b, 88);
  if (h.qpn > 0xffffff || h.psn > 0xffffff) return ParseError::qpn;
  // Reserved bytes are zero, so what is accepted re-encodes to the same bytes (and a later
  // version that uses them is not misread as this one).
  for (size_t i : {size_t{7}, size_t{34}, size_t{35}, size_t{36}, size_t{37}, size_t{38}, size_t{39}})
    if (b[i] != std::byte{0}) return ParseError::reserved;
  for (size_t i = 104; i < kHelloSize; ++i)
    if (b[i] != std::byte{0}) return ParseError::reserved;
  return ParseError::ok;
}

void encode_notice(const NoticeFields& n, std::span<std::byte, kNoticeSize> w) {
  le::store<uint32_t>(w.data(), n.seq);
  le::store<uint32_t>(w.data() + 4, n.length);
  le::store<uint64_t>(w.data() + 8, n.offset);
}

ParseError decode_notice(std::span<const std::byte> b, NoticeFields& n) {
  if (b.size() != kNoticeSize) return ParseError::size;
  n = {le::load<uint32_t>(b.data()), le::load<uint32_t>(b.data() + 4), le::load<uint64_t>(b.data() + 8)};
  return ParseError::ok;
}

ParseError check_notice(const NoticeFields& n, uint64_t seq, uint32_t slots, uint32_t slot_bytes) {
  if (slots == 0) return ParseError::slots;
  if (n.seq != static_cast<uint32_t>(seq)) return ParseError::sequence;
  if (n.offset != (seq % slots) * uint64_t{slot_bytes}) return ParseError::offset;
  if (n.length > slot_bytes) return ParseError::length;
  return ParseError::ok;
}

}  // namespace weft::msg::wire
