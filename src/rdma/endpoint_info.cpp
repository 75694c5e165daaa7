#include "rdma/endpoint_info.hpp"

#include <cstring>

#include "base/little_endian.hpp"

namespace weft::rdma {

namespace {
constexpr uint32_t kMagic = 0x44524657;  // "WFRD" little-endian

// Fields at fixed offsets inside the checked size (decode checks kWireSize first).
template <typename T>
void put(EndpointInfo::Wire& w, size_t off, T v) {
  le::store<T>(w.data() + off, v);
}

template <typename T>
T get(std::span<const std::byte> b, size_t off) {
  return le::load<T>(b.data() + off);
}
}  // namespace

EndpointInfo::Wire EndpointInfo::encode() const {
  Wire w{};
  put<uint32_t>(w, 0, kMagic);
  put<uint32_t>(w, 4, qp.qpn);
  put<uint32_t>(w, 8, qp.psn);
  put<uint16_t>(w, 12, qp.lid);
  std::memcpy(w.data() + 16, qp.gid.raw, 16);
  put<uint64_t>(w, 32, buf.addr);
  put<uint32_t>(w, 40, buf.rkey);
  put<uint32_t>(w, 44, buf.length);
  put<uint32_t>(w, 48, qkey);
  return w;
}

Result<EndpointInfo> EndpointInfo::decode(std::span<const std::byte> b) {
  if (b.size() < kWireSize) return fail("endpoint info: {} bytes, need {}", b.size(), kWireSize);
  if (get<uint32_t>(b, 0) != kMagic) return fail("endpoint info: bad magic 0x{:08x}", get<uint32_t>(b, 0));
  EndpointInfo e;
  e.qp.qpn = get<uint32_t>(b, 4);
  e.qp.psn = get<uint32_t>(b, 8);
  e.qp.lid = get<uint16_t>(b, 12);
  std::memcpy(e.qp.gid.raw, b.data() + 16, 16);
  e.buf.addr = get<uint64_t>(b, 32);
  e.buf.rkey = get<uint32_t>(b, 40);
  e.buf.length = get<uint32_t>(b, 44);
  e.qkey = get<uint32_t>(b, 48);
  if (e.qp.qpn > 0xffffff || e.qp.psn > 0xffffff) return fail("endpoint info: QPN/PSN wider than 24 bits");
  return e;
}

}  // namespace weft::rdma
