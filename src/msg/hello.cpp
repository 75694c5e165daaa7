#include "msg/hello.hpp"

#include <cstring>

#include "base/little_endian.hpp"
#include "msg/wire_records.hpp"

namespace weft::msg {

namespace {
wire::Buf to_wire(const rdma::RemoteBuf& b) { return {b.addr, b.rkey, b.length}; }
rdma::RemoteBuf from_wire(const wire::Buf& b) { return {b.addr, b.rkey, b.length}; }
}  // namespace

Hello::Wire Hello::encode() const {
  wire::HelloFields f;
  f.kind = static_cast<uint8_t>(kind);
  f.max_message = max_message;
  f.slots = slots;
  f.ring_bytes = ring_bytes;
  f.qpn = qp.qpn;
  f.psn = qp.psn;
  f.lid = qp.lid;
  std::memcpy(f.gid, qp.gid.raw, 16);
  f.inbox = to_wire(inbox);
  f.outbox = to_wire(outbox);
  f.ctrl = to_wire(ctrl);
  Wire w{};
  wire::encode_hello(f, w);
  return w;
}

Result<Hello> Hello::decode(std::span<const std::byte> b) {
  wire::HelloFields f;
  switch (wire::decode_hello(b, f)) {
    case wire::ParseError::ok:
      break;
    case wire::ParseError::size:
      return fail("msg hello: {} bytes, need {}", b.size(), kWireSize);
    case wire::ParseError::magic:
      return fail("msg hello: bad magic 0x{:08x} (not a weft msg peer?)", le::load<uint32_t>(b.data()));
    case wire::ParseError::version:
      return fail("msg hello: version {}, we speak {}", le::load<uint16_t>(b.data() + 4),
                  wire::kHelloVersion);
    case wire::ParseError::kind:
      return fail("msg hello: unknown connection type {}", f.kind);
    case wire::ParseError::reserved:
      return fail("msg hello: reserved bytes not zero (a newer peer?)");
    default:
      return fail("msg hello: QPN/PSN wider than 24 bits");
  }
  Hello h;
  h.kind = static_cast<Kind>(f.kind);
  h.max_message = f.max_message;
  h.slots = f.slots;
  h.ring_bytes = f.ring_bytes;
  h.qp.qpn = f.qpn;
  h.qp.psn = f.psn;
  h.qp.lid = f.lid;
  std::memcpy(h.qp.gid.raw, f.gid, 16);
  h.inbox = from_wire(f.inbox);
  h.outbox = from_wire(f.outbox);
  h.ctrl = from_wire(f.ctrl);
  return h;
}

Status Hello::compatible(const Hello& mine, const Hello& theirs) {
  if (mine.kind != theirs.kind)
    return fail("peer runs connection type {}, we run {}", to_string(theirs.kind), to_string(mine.kind));
  if (mine.max_message != theirs.max_message)
    return fail("peer has max message {} bytes, we have {}", theirs.max_message, mine.max_message);
  if (mine.slots != theirs.slots) return fail("peer has {} slots, we have {}", theirs.slots, mine.slots);
  if (mine.ring_bytes != theirs.ring_bytes)
    return fail("peer has a {}-byte ring, we have {}", theirs.ring_bytes, mine.ring_bytes);
  return {};
}

}  // namespace weft::msg
