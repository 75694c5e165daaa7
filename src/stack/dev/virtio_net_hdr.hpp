#pragma once
// struct virtio_net_hdr from <linux/virtio_net.h>, which does not compile as C++ (a field named
// `class`), shared by the devices that speak it (TAP with IFF_VNET_HDR, AF_PACKET with
// PACKET_VNET_HDR). Host byte order: the kernel uses little-endian headers on a little-endian host.
#include <cstdint>

#include "stack/dev/device.hpp"

namespace weft::stack {

struct VirtioNetHdr {
  uint8_t flags;
  uint8_t gso_type;
  uint16_t hdr_len;
  uint16_t gso_size;
  uint16_t csum_start;
  uint16_t csum_offset;
};
static_assert(sizeof(VirtioNetHdr) == 10);
inline constexpr uint8_t kVirtioNeedsCsum = 1;  // VIRTIO_NET_HDR_F_NEEDS_CSUM
inline constexpr uint8_t kVirtioDataValid = 2;  // VIRTIO_NET_HDR_F_DATA_VALID
inline constexpr uint8_t kVirtioGsoNone = 0;    // VIRTIO_NET_HDR_GSO_NONE
inline constexpr uint8_t kVirtioGsoTcpv4 = 1;   // VIRTIO_NET_HDR_GSO_TCPV4
inline constexpr uint8_t kVirtioGsoEcn = 0x80;  // VIRTIO_NET_HDR_GSO_ECN

// The header that asks the kernel for what `off` says: a partial checksum to finish, and for a TSO
// super-frame the segment size to cut it at.
inline VirtioNetHdr virtio_hdr_for(const TxOffload& off) {
  VirtioNetHdr h{};
  if (off.needs_csum) {
    h.flags = kVirtioNeedsCsum;
    h.csum_start = off.csum_start;
    h.csum_offset = off.csum_offset;
  }
  h.gso_type = kVirtioGsoNone;
  if (off.gso_size > 0) {
    h.gso_type = kVirtioGsoTcpv4;
    h.gso_size = off.gso_size;
    h.hdr_len = off.hdr_len;
  }
  return h;
}

}  // namespace weft::stack
