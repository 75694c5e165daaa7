#include "stack/dev/xdp_device.hpp"

#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#include <cerrno>
#include <cstdarg>
#include <cstring>

#include "base/fd.hpp"

namespace weft::stack {

struct XdpDevice::Rings {
  xsk_ring_prod fill{};
  xsk_ring_cons comp{};
  xsk_ring_cons rx{};
  xsk_ring_prod tx{};
};

namespace {
// libbpf and libxdp narrate their loading on stderr (ELF sections they skip, "No bpffs found" and
// the fallback to a program without dispatcher): weft says what it attached itself, and open()
// reports the errors that matter with their errno.
int quiet_libbpf(libbpf_print_level, const char*, va_list) { return 0; }
int quiet_libxdp(libxdp_print_level, const char*, va_list) { return 0; }

Status read_link(const std::string& ifname, size_t& mtu, wire::MacAddr& mac) {
  const Fd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return fail_errno("xdp: socket");
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, ifname.data(), ifname.size());
  if (ioctl(s.get(), SIOCGIFMTU, &ifr) != 0) return fail_errno("xdp: SIOCGIFMTU " + ifname);
  mtu = static_cast<size_t>(ifr.ifr_mtu);
  if (ioctl(s.get(), SIOCGIFHWADDR, &ifr) != 0) return fail_errno("xdp: SIOCGIFHWADDR " + ifname);
  std::memcpy(mac.b.data(), ifr.ifr_hwaddr.sa_data, 6);
  return {};
}
}  // namespace

XdpDevice::XdpDevice(size_t frames, size_t frame_size, size_t rx_frames)
    : umem_frames_(frames, frame_size, rx_frames), r_(std::make_unique<Rings>()) {}

Result<std::unique_ptr<XdpDevice>> XdpDevice::open(const Options& o) {
  if (o.ifname.empty() || o.ifname.size() >= IFNAMSIZ)
    return fail("xdp: interface name '{}' must have 1 to {} characters", o.ifname, IFNAMSIZ - 1);
  if (o.frames < 4 || o.ring == 0 || (o.ring & (o.ring - 1)) != 0 || o.ring > o.frames / 2)
    return fail("xdp: ring size must be a power of two of at most half the {} UMEM frames", o.frames);
  const unsigned ifindex = if_nametoindex(o.ifname.c_str());
  if (ifindex == 0) return fail_errno("xdp: interface " + o.ifname);
  libbpf_set_print(quiet_libbpf);
  libxdp_set_print(quiet_libxdp);

  size_t mtu = 0;
  wire::MacAddr mac;
  if (auto st = read_link(o.ifname, mtu, mac); !st) return std::unexpected(st.error());
  // 2 KiB frames hold a 1500-byte MTU after copy mode's 256-byte headroom, and halve the UMEM
  // against 4 KiB ones (a receive frame holds one frame, an ACK as much as a full segment).
  const size_t frame = mtu + 14 <= 2048 - XDP_PACKET_HEADROOM ? 2048 : XSK_UMEM__DEFAULT_FRAME_SIZE;
  if (mtu + 14 > frame - XDP_PACKET_HEADROOM)
    return fail("xdp: MTU {} of {} does not fit a {}-byte UMEM frame", mtu, o.ifname, frame);
  std::unique_ptr<XdpDevice> d(new XdpDevice(o.frames, frame, o.frames / 2));
  d->name_ = o.ifname;
  d->mtu_ = mtu;
  d->mac_ = mac;
  d->queue_ = o.queue;
  d->ring_ = o.ring;
  d->tx_batch_ = std::max<size_t>(o.tx_batch, 1);

  auto area = Mapping::map(o.frames * frame, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                           "xdp: mmap UMEM");
  if (!area) return std::unexpected(area.error());
  d->area_ = std::move(*area);
  xsk_umem_config uc{};
  uc.fill_size = static_cast<uint32_t>(o.ring);
  uc.comp_size = static_cast<uint32_t>(o.ring);
  uc.frame_size = static_cast<uint32_t>(frame);
  uc.frame_headroom = 0;
  if (int rc = xsk_umem__create(&d->umem_, d->area_.data(), d->area_.size(), &d->r_->fill, &d->r_->comp, &uc);
      rc != 0)
    return fail_errno("xdp: xsk_umem__create", -rc);

  // Native first (XDP_FLAGS_DRV_MODE), generic as the fallback; never replace a program someone
  // else attached (UPDATE_IF_NOEXIST).
  xsk_socket_config sc{};
  sc.rx_size = static_cast<uint32_t>(o.ring);
  sc.tx_size = static_cast<uint32_t>(o.ring);
  sc.bind_flags = XDP_COPY | XDP_USE_NEED_WAKEUP;
  int rc = -EOPNOTSUPP;
  if (!o.generic) {
    sc.xdp_flags = XDP_FLAGS_DRV_MODE | XDP_FLAGS_UPDATE_IF_NOEXIST;
    rc = xsk_socket__create(&d->xsk_, o.ifname.c_str(), o.queue, d->umem_, &d->r_->rx, &d->r_->tx, &sc);
    d->native_ = rc == 0;
  }
  if (rc != 0) {
    const int native_rc = rc;
    sc.xdp_flags = XDP_FLAGS_SKB_MODE | XDP_FLAGS_UPDATE_IF_NOEXIST;
    rc = xsk_socket__create(&d->xsk_, o.ifname.c_str(), o.queue, d->umem_, &d->r_->rx, &d->r_->tx, &sc);
    if (rc != 0)
      return fail("xdp: no XDP socket on {} queue {}: native mode: {}; generic mode: {}", o.ifname, o.queue,
                  o.generic ? "not tried" : std::strerror(-native_rc), std::strerror(-rc));
  }
  d->fd_ = xsk_socket__fd(d->xsk_);
  bpf_xdp_query_id(static_cast<int>(ifindex), d->native_ ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE,
                   &d->prog_id_);

  // Every receive frame goes to the kernel now; they come back one by one in receive().
  uint32_t idx = 0;
  const size_t n = std::min(d->umem_frames_.rx_count(), o.ring);
  if (xsk_ring_prod__reserve(&d->r_->fill, static_cast<uint32_t>(n), &idx) != n)
    return fail("xdp: the fill ring took fewer than {} frames", n);
  for (size_t i = 0; i < n; ++i)
    *xsk_ring_prod__fill_addr(&d->r_->fill, idx + static_cast<uint32_t>(i)) = d->umem_frames_.rx_addr(i);
  xsk_ring_prod__submit(&d->r_->fill, static_cast<uint32_t>(n));
  return d;
}

XdpDevice::~XdpDevice() {
  if (xsk_ != nullptr) {
    drop_reservation();
    flush();
    xsk_socket__delete(xsk_);  // the last socket on the interface: libxdp detaches the program
  }
  if (umem_ != nullptr) xsk_umem__delete(umem_);
  // area_ is unmapped after this, when the UMEM that used it is gone.
}

Result<RxInfo> XdpDevice::receive(wire::MutBytes buf) {
  drop_reservation();
  for (;;) {
    uint32_t idx = 0;
    if (xsk_ring_cons__peek(&r_->rx, 1, &idx) == 0) return RxInfo{};
    const xdp_desc* desc = xsk_ring_cons__rx_desc(&r_->rx, idx);
    const uint64_t addr = xsk_umem__add_offset_to_addr(desc->addr);
    const size_t len = desc->len;
    const bool fits = len <= buf.size();
    if (fits) std::memcpy(buf.data(), area_.data() + addr, len);
    xsk_ring_cons__release(&r_->rx, 1);
    // The frame goes straight back to the kernel: the fill ring has room for every receive frame,
    // so this cannot fail.
    uint32_t fi = 0;
    if (xsk_ring_prod__reserve(&r_->fill, 1, &fi) == 1) {
      *xsk_ring_prod__fill_addr(&r_->fill, fi) = umem_frames_.frame_of(addr);
      xsk_ring_prod__submit(&r_->fill, 1);
    }
    if (fits) {
      ++counters_.rx_frames;
      return RxInfo{len, false};
    }
    ++counters_.rx_too_long;
  }
}

void XdpDevice::drop_reservation() {
  if (reserved_) umem_frames_.give_back(*reserved_);
  reserved_.reset();
}

void XdpDevice::reclaim() {
  uint32_t idx = 0;
  const uint32_t n = xsk_ring_cons__peek(&r_->comp, static_cast<uint32_t>(ring_), &idx);
  for (uint32_t i = 0; i < n; ++i) umem_frames_.give_back(*xsk_ring_cons__comp_addr(&r_->comp, idx + i));
  if (n > 0) xsk_ring_cons__release(&r_->comp, n);
}

size_t XdpDevice::tx_pending() const {
  return ring_ - xsk_prod_nb_free(const_cast<xsk_ring_prod*>(&r_->tx), static_cast<uint32_t>(ring_));
}

void XdpDevice::kick() {
  tx_queued_ = 0;
  // Copy mode sends at most 32 descriptors per call and answers EAGAIN while more wait (or while
  // the completion ring is full: reclaim in between). Bounded: ring / 32 calls drain a full ring.
  for (size_t i = 0; i <= ring_ / 32 + 1 && tx_pending() > 0; ++i) {
    ++counters_.tx_kicks;
    const ssize_t rc = ::sendto(fd_, nullptr, 0, MSG_DONTWAIT, nullptr, 0);
    reclaim();
    if (rc < 0 && errno != EAGAIN && errno != EBUSY && errno != ENOBUFS) break;
  }
}

wire::MutBytes XdpDevice::tx_reserve(size_t max_len) {
  drop_reservation();
  if (max_len > umem_frames_.frame_size()) return {};
  if (umem_frames_.free_count() == 0) reclaim();
  if (umem_frames_.free_count() == 0 || xsk_prod_nb_free(&r_->tx, 1) == 0) kick();
  if (xsk_prod_nb_free(&r_->tx, 1) == 0) return {};
  reserved_ = umem_frames_.take();
  if (!reserved_) return {};
  return {area_.data() + *reserved_, umem_frames_.frame_size()};
}

Status XdpDevice::tx_commit(size_t len, const TxOffload& off) {
  if (!reserved_) return fail("xdp: tx_commit without tx_reserve");
  if (off.needs_csum || off.gso_size != 0) {
    drop_reservation();
    return fail("xdp: copy mode has no checksum or segmentation offload");
  }
  uint32_t idx = 0;
  if (len > umem_frames_.frame_size() || xsk_ring_prod__reserve(&r_->tx, 1, &idx) != 1) {
    drop_reservation();
    ++counters_.tx_dropped;
    return {};
  }
  xdp_desc* desc = xsk_ring_prod__tx_desc(&r_->tx, idx);
  desc->addr = *reserved_;
  desc->len = static_cast<uint32_t>(len);
  desc->options = 0;
  xsk_ring_prod__submit(&r_->tx, 1);
  reserved_.reset();
  ++counters_.tx_frames;
  if (++tx_queued_ >= tx_batch_) kick();
  return {};
}

Status XdpDevice::transmit(wire::Bytes frame, const TxOffload& off) {
  const wire::MutBytes slot = tx_reserve(frame.size());
  if (slot.empty()) {
    ++counters_.tx_dropped;  // as a full NIC queue: TCP sends it again
    return {};
  }
  std::memcpy(slot.data(), frame.data(), frame.size());
  return tx_commit(frame.size(), off);
}

XdpDevice::KernelStats XdpDevice::kernel_stats() const {
  xdp_statistics st{};
  socklen_t len = sizeof st;
  KernelStats k;
  if (getsockopt(fd_, SOL_XDP, XDP_STATISTICS, &st, &len) != 0) return k;
  k.rx_dropped = st.rx_dropped;
  k.rx_ring_full = st.rx_ring_full;
  k.rx_fill_ring_empty = st.rx_fill_ring_empty_descs;
  k.tx_invalid = st.tx_invalid_descs;
  return k;
}

void XdpDevice::flush() {
  if (tx_pending() > 0) kick();
  reclaim();
}

}  // namespace weft::stack
