#include "msg/hello.hpp"

#include <cstring>

#include "msg/wire_le.hpp"

namespace weft::msg {

namespace {
constexpr uint32_t kMagic = 0x534d4657;  // "WFMS" little-endian
constexpr uint16_t kVersion = 1;

void put_buf(std::span<std::byte> w, size_t off, const rdma::RemoteBuf& b) {
  wire::put<uint64_t>(w, off, b.addr);
  wire::put<uint32_t>(w, off + 8, b.rkey);
  wire::put<uint32_t>(w, off + 12, b.length);
}

rdma::RemoteBuf get_buf(std::span<const std::byte> b, size_t off) {
  return {wire::get<uint64_t>(b, off), wire::get<uint32_t>(b, off + 8), wire::get<uint32_t>(b, off + 12)};
}
}  // namespace

Hello::Wire Hello::encode() const {
  Wire w{};
  wire::put<uint32_t>(w, 0, kMagic);
  wire::put<uint16_t>(w, 4, kVersion);
  wire::put<uint8_t>(w, 6, static_cast<uint8_t>(kind));
  wire::put<uint32_t>(w, 8, max_message);
  wire::put<uint32_t>(w, 12, slots);
  wire::put<uint64_t>(w, 16, ring_bytes);
  wire::put<uint32_t>(w, 24, qp.qpn);
  wire::put<uint32_t>(w, 28, qp.psn);
  wire::put<uint16_t>(w, 32, qp.lid);
  std::memcpy(w.data() + 40, qp.gid.raw, 16);
  put_buf(w, 56, inbox);
  put_buf(w, 72, outbox);
  put_buf(w, 88, ctrl);
  return w;
}

Result<Hello> Hello::decode(std::span<const std::byte> b) {
  if (b.size() != kWireSize) return fail("msg hello: {} bytes, need {}", b.size(), kWireSize);
  if (wire::get<uint32_t>(b, 0) != kMagic)
    return fail("msg hello: bad magic 0x{:08x} (not a weft msg peer?)", wire::get<uint32_t>(b, 0));
  if (auto v = wire::get<uint16_t>(b, 4); v != kVersion)
    return fail("msg hello: version {}, we speak {}", v, kVersion);
  Hello h;
  const auto k = wire::get<uint8_t>(b, 6);
  bool known = false;
  for (Kind x : all_kinds()) known = known || static_cast<uint8_t>(x) == k;
  if (!known) return fail("msg hello: unknown connection type {}", k);
  h.kind = static_cast<Kind>(k);
  h.max_message = wire::get<uint32_t>(b, 8);
  h.slots = wire::get<uint32_t>(b, 12);
  h.ring_bytes = wire::get<uint64_t>(b, 16);
  h.qp.qpn = wire::get<uint32_t>(b, 24);
  h.qp.psn = wire::get<uint32_t>(b, 28);
  h.qp.lid = wire::get<uint16_t>(b, 32);
  std::memcpy(h.qp.gid.raw, b.data() + 40, 16);
  h.inbox = get_buf(b, 56);
  h.outbox = get_buf(b, 72);
  h.ctrl = get_buf(b, 88);
  if (h.qp.qpn > 0xffffff || h.qp.psn > 0xffffff) return fail("msg hello: QPN/PSN wider than 24 bits");
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
