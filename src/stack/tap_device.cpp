#include "stack/tap_device.hpp"

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/random.hpp"
#include "stack/virtio_net_hdr.hpp"

namespace weft::stack {

Result<std::unique_ptr<TapDevice>> TapDevice::open(const Options& o) {
  if (o.name.size() >= IFNAMSIZ)
    return fail("tap: name '{}' is longer than {} characters", o.name, IFNAMSIZ - 1);
  const int fd = ::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return fail_errno("open /dev/net/tun");
  ifreq ifr{};
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI | (o.vnet_hdr ? IFF_VNET_HDR : 0);
  std::memcpy(ifr.ifr_name, o.name.data(), o.name.size());
  if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
    const int e = errno;
    ::close(fd);
    return fail_errno("TUNSETIFF " + o.name, e);
  }
  if (o.vnet_hdr) {
    int hdr = sizeof(VirtioNetHdr);
    // Receive: the kernel may hand us frames whose checksum it left partial (its own packets).
    if (ioctl(fd, TUNSETVNETHDRSZ, &hdr) < 0 || ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM) < 0) {
      const int e = errno;
      ::close(fd);
      return fail_errno("TUNSETVNETHDRSZ/TUNSETOFFLOAD", e);
    }
  }
  wire::MacAddr mac = o.mac;
  if (mac.is_zero()) {
    const uint64_t r = random_u64();
    for (size_t i = 0; i < 6; ++i) mac.b[i] = static_cast<uint8_t>(r >> (8 * i));
    mac.b[0] = static_cast<uint8_t>((mac.b[0] & 0xfe) | 0x02);  // unicast, locally administered
  }
  return std::unique_ptr<TapDevice>(new TapDevice(fd, ifr.ifr_name, o.vnet_hdr, o.mtu, mac));
}

TapDevice::~TapDevice() {
  if (fd_ >= 0) ::close(fd_);
}

Result<RxInfo> TapDevice::receive(wire::MutBytes buf) {
  VirtioNetHdr h{};
  iovec iov[2] = {{&h, sizeof h}, {buf.data(), buf.size()}};
  const int first = vnet_hdr_ ? 0 : 1;
  for (;;) {
    const ssize_t n = readv(fd_, iov + first, 2 - first);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return RxInfo{};
      return fail_errno("tap read " + name_);
    }
    if (!vnet_hdr_) return RxInfo{static_cast<size_t>(n), false};
    if (static_cast<size_t>(n) <= sizeof h) continue;  // header only: nothing to hand up
    if (h.gso_type != kVirtioGsoNone) {
      ++counters_.rx_gso_dropped;
      continue;
    }
    // NEEDS_CSUM: generated on this host, the checksum is partial but the data cannot be corrupt;
    // DATA_VALID: the kernel checked it.
    const bool ok = (h.flags & (kVirtioNeedsCsum | kVirtioDataValid)) != 0;
    return RxInfo{static_cast<size_t>(n) - sizeof h, ok};
  }
}

Status TapDevice::transmit(wire::Bytes frame, const TxOffload& off) {
  // tun accepts GSO frames from user space whatever TUNSETOFFLOAD says.
  VirtioNetHdr h = virtio_hdr_for(off);
  iovec iov[2] = {{&h, sizeof h}, {const_cast<uint8_t*>(frame.data()), frame.size()}};
  const int first = vnet_hdr_ ? 0 : 1;
  for (;;) {
    const ssize_t n = writev(fd_, iov + first, 2 - first);
    if (n >= 0) return {};
    if (errno == EINTR) continue;
    if (errno == EAGAIN) {
      ++counters_.tx_would_block;  // the kernel's queue is full: like a drop on the wire
      return {};
    }
    return fail_errno("tap write " + name_);
  }
}

}  // namespace weft::stack
