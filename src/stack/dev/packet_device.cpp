#include "stack/dev/packet_device.hpp"

#include <arpa/inet.h>
#include <linux/ethtool.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "base/random.hpp"
#include "stack/dev/interface_claim.hpp"
#include "stack/dev/virtio_net_hdr.hpp"

namespace weft::stack {

namespace {
constexpr size_t kSllOffset = TPACKET_ALIGN(sizeof(tpacket3_hdr));

int set_int(int fd, int opt, int v) { return setsockopt(fd, SOL_PACKET, opt, &v, sizeof v); }

// Whether the interface segments TCP itself (ethtool -k: tcp-segmentation-offload). Unknown
// counts as no: then frames take the qdisc path, which is correct either way.
bool device_tso(int fd, const std::string& ifname) {
  ethtool_value v{};
  v.cmd = ETHTOOL_GTSO;
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, ifname.data(), ifname.size());
  ifr.ifr_data = reinterpret_cast<char*>(&v);
  return ioctl(fd, SIOCETHTOOL, &ifr) == 0 && v.data != 0;
}

// A classic BPF filter on Ethernet frames that tells bare SYNs (IPv4, TCP, not a later fragment,
// SYN set and ACK, RST, FIN clear, an IP packet of at most kMaxSynIp bytes, so it fits a SYN slot
// whole) from all else: `syn` is the verdict for them, `other` for the rest (0 drops, else the
// bytes to keep).
constexpr uint32_t kMaxSynIp = 160;  // a 256-byte V2 slot holds its frame from byte 66
std::array<sock_filter, 14> syn_split_filter(uint32_t syn, uint32_t other) {
  return {{
      BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 12),                  // 0: EtherType
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IP, 0, 11),    // 1: IPv4, else 13
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 23),                  // 2: IP protocol
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_TCP, 0, 9),  // 3: TCP, else 13
      BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 20),                  // 4: flags and fragment offset
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x1fff, 7, 0),      // 5: a later fragment: 13
      BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 16),                  // 6: IP total length
      BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, kMaxSynIp, 5, 0),    // 7: too long for a SYN slot: 13
      BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 14),                 // 8: X = IP header length
      BPF_STMT(BPF_LD | BPF_B | BPF_IND, 14 + 13),             // 9: TCP flags
      BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x17),               // 10: ACK, RST, SYN, FIN
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x02, 0, 1),         // 11: SYN alone: 12, else 13
      BPF_STMT(BPF_RET | BPF_K, syn),                          // 12
      BPF_STMT(BPF_RET | BPF_K, other),                        // 13
  }};
}

Status attach_filter(int fd, std::array<sock_filter, 14>& code, const char* what) {
  sock_fprog prog{static_cast<unsigned short>(code.size()), code.data()};
  if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) < 0) return fail_errno(what);
  return {};
}

}  // namespace

Result<std::unique_ptr<PacketDevice>> PacketDevice::open(const Options& o) {
  if (o.ifname.empty() || o.ifname.size() >= IFNAMSIZ)
    return fail("packet: interface name '{}' must have 1 to {} characters", o.ifname, IFNAMSIZ - 1);
  const long page = sysconf(_SC_PAGESIZE);
  if (o.block_size == 0 || o.block_size % static_cast<size_t>(page) != 0 || o.block_count == 0)
    return fail("packet: ring blocks must be a positive multiple of {} bytes", page);
  const unsigned ifindex = if_nametoindex(o.ifname.c_str());
  if (ifindex == 0) return fail_errno("packet: interface " + o.ifname);

  // What open() gives up half way closes and unmaps with `d`.
  std::unique_ptr<PacketDevice> d(new PacketDevice());
  d->name_ = o.ifname;

  d->rx_fd_.reset(
      socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));  // protocol 0: no frames yet
  const int rx = d->rx_fd_.get();
  if (rx < 0) return fail_errno("packet: socket(AF_PACKET) (needs CAP_NET_RAW)");
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, o.ifname.data(), o.ifname.size());
  if (ioctl(rx, SIOCGIFFLAGS, &ifr) < 0) return fail_errno("packet: SIOCGIFFLAGS " + o.ifname);
  if ((ifr.ifr_flags & IFF_UP) == 0)
    return fail("packet: {} is down (ip link set {} up)", o.ifname, o.ifname);
  if (ioctl(rx, SIOCGIFMTU, &ifr) < 0) return fail_errno("packet: SIOCGIFMTU " + o.ifname);
  d->mtu_ = static_cast<size_t>(ifr.ifr_mtu);

  d->v3_ = o.rx_ring == Options::Ring::v3;
  if (set_int(rx, PACKET_VERSION, d->v3_ ? TPACKET_V3 : TPACKET_V2) < 0)
    return fail_errno(d->v3_ ? "packet: TPACKET_V3" : "packet: TPACKET_V2");
  if (d->v3_) {
    tpacket_req3 req{};
    req.tp_block_size = static_cast<unsigned>(o.block_size);
    req.tp_block_nr = static_cast<unsigned>(o.block_count);
    req.tp_frame_size = 2048;  // V3 packs frames by their real size; this only has to divide a block
    req.tp_frame_nr = static_cast<unsigned>(o.block_size / req.tp_frame_size * o.block_count);
    req.tp_retire_blk_tov = o.block_timeout_ms;
    if (setsockopt(rx, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) < 0)
      return fail_errno("packet: PACKET_RX_RING");
  } else {
    // A slot holds the header, the address and the frame at the offset the kernel aligns it to
    // (a VLAN tag included): 2 KiB for a 1500-byte MTU.
    const size_t need = TPACKET_ALIGN(TPACKET2_HDRLEN + 16) + 14 + 4 + d->mtu_;
    size_t frame = 2048;
    while (frame < need) frame *= 2;
    if (o.block_size % frame != 0)
      return fail("packet: ring blocks of {} bytes cannot hold {}-byte slots (MTU {})", o.block_size, frame,
                  d->mtu_);
    tpacket_req req{};
    req.tp_block_size = static_cast<unsigned>(o.block_size);
    req.tp_block_nr = static_cast<unsigned>(o.block_count);
    req.tp_frame_size = static_cast<unsigned>(frame);
    req.tp_frame_nr = static_cast<unsigned>(o.block_size / frame * o.block_count);
    if (setsockopt(rx, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) < 0)
      return fail_errno("packet: PACKET_RX_RING");
    d->frame_size_ = frame;
    d->frame_count_ = req.tp_frame_nr;
    // Super-frames (GRO, or a local sender's GSO) do not fit a slot: the kernel queues them whole on
    // the socket too. Its receive buffer must hold a few of them (as root past rmem_max).
    if (set_int(rx, PACKET_COPY_THRESH, 1) < 0) return fail_errno("packet: PACKET_COPY_THRESH");
    const int rcvbuf = 4 << 20;
    if (setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) < 0)
      (void)setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  }
  auto ring = Mapping::map(o.block_size * o.block_count, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                           rx, "packet: mmap of the receive ring");
  if (!ring) return std::unexpected(ring.error());
  d->ring_ = std::move(*ring);
  d->block_size_ = o.block_size;
  d->block_count_ = o.block_count;
  // Our own transmissions would otherwise come back into the ring when the qdisc path is taken.
  if (set_int(rx, PACKET_IGNORE_OUTGOING, 1) < 0) return fail_errno("packet: PACKET_IGNORE_OUTGOING");
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ETH_P_ALL);
  sll.sll_ifindex = static_cast<int>(ifindex);
  if (!d->v3_ && o.syn_ring_blocks > 0) {
    // The SYN ring's socket is bound first, so no SYN falls between the two filters.
    d->syn_fd_.reset(socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    const int sf = d->syn_fd_.get();
    if (sf < 0) return fail_errno("packet: socket(AF_PACKET) for the SYN ring");
    if (set_int(sf, PACKET_VERSION, TPACKET_V2) < 0) return fail_errno("packet: TPACKET_V2 (SYN ring)");
    tpacket_req req{};
    req.tp_block_size = static_cast<unsigned>(o.block_size);
    req.tp_block_nr = static_cast<unsigned>(o.syn_ring_blocks);
    req.tp_frame_size = kSynSlot;
    req.tp_frame_nr = static_cast<unsigned>(o.block_size / kSynSlot * o.syn_ring_blocks);
    if (setsockopt(sf, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) < 0)
      return fail_errno("packet: PACKET_RX_RING (SYN ring)");
    auto m = Mapping::map(o.block_size * o.syn_ring_blocks, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                          sf, "packet: mmap of the SYN ring");
    if (!m) return std::unexpected(m.error());
    d->syn_.map = std::move(*m);
    d->syn_.count = req.tp_frame_nr;
    if (set_int(sf, PACKET_IGNORE_OUTGOING, 1) < 0)
      return fail_errno("packet: PACKET_IGNORE_OUTGOING (SYN ring)");
    auto only_syns = syn_split_filter(0xffff, 0);
    if (auto s = attach_filter(sf, only_syns, "packet: SO_ATTACH_FILTER (SYN ring)"); !s)
      return std::unexpected(s.error());
    if (bind(sf, reinterpret_cast<sockaddr*>(&sll), sizeof sll) < 0)
      return fail_errno("packet: bind (SYN ring) to " + o.ifname);
    auto no_syns = syn_split_filter(0, 0xffffffff);
    if (auto s = attach_filter(rx, no_syns, "packet: SO_ATTACH_FILTER"); !s)
      return std::unexpected(s.error());
  }
  if (bind(rx, reinterpret_cast<sockaddr*>(&sll), sizeof sll) < 0)
    return fail_errno("packet: bind to " + o.ifname);

  d->mac_ = o.mac;
  if (d->mac_.is_zero()) {
    const uint64_t r = random_u64();
    for (size_t i = 0; i < 6; ++i) d->mac_.b[i] = static_cast<uint8_t>(r >> (8 * i));
    d->mac_.b[0] = static_cast<uint8_t>((d->mac_.b[0] & 0xfe) | 0x02);  // unicast, locally administered
  }
  auto claim = claim_interface(o.ifname, d->mac_.b);
  if (!claim) return unexpected(claim.error());
  d->claim_ = std::move(*claim);
  // A MAC that is not the interface's own needs promiscuous mode (a real NIC filters on its own).
  if (ioctl(rx, SIOCGIFHWADDR, &ifr) < 0) return fail_errno("packet: SIOCGIFHWADDR " + o.ifname);
  if (std::memcmp(ifr.ifr_hwaddr.sa_data, d->mac_.b.data(), 6) != 0) {
    packet_mreq mr{};
    mr.mr_ifindex = static_cast<int>(ifindex);
    mr.mr_type = PACKET_MR_PROMISC;
    if (setsockopt(rx, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof mr) < 0)
      return fail_errno("packet: promiscuous mode on " + o.ifname);
    d->promisc_ = true;
  }

  // Transmit socket: protocol 0 receives nothing; bound only to name the interface.
  d->tx_fd_.reset(socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
  const int tx = d->tx_fd_.get();
  if (tx < 0) return fail_errno("packet: socket(AF_PACKET) for transmit");
  d->tx_csum_ = o.tx_csum_offload;
  // Super-frames (tx_csum_: TSO) on an interface without TSO need the kernel's software GSO,
  // which only the qdisc path runs.
  d->bypass_ = o.qdisc_bypass && (!d->tx_csum_ || device_tso(tx, o.ifname));
  if (d->bypass_ && set_int(tx, PACKET_QDISC_BYPASS, 1) < 0) return fail_errno("packet: PACKET_QDISC_BYPASS");
  if (d->tx_csum_ && set_int(tx, PACKET_VNET_HDR, 1) < 0) return fail_errno("packet: PACKET_VNET_HDR");
  sll.sll_protocol = 0;
  if (bind(tx, reinterpret_cast<sockaddr*>(&sll), sizeof sll) < 0)
    return fail_errno("packet: bind (transmit) to " + o.ifname);

  // The batch: one slot per frame, header and frame contiguous so each message is one iovec.
  d->tx_batch_ = o.tx_batch == 0 ? 1 : o.tx_batch;
  d->slot_size_ = sizeof(VirtioNetHdr) + 14 + d->mtu_;
  d->tx_buf_.resize(d->slot_size_ * d->tx_batch_);
  d->tx_iov_.resize(d->tx_batch_);
  d->tx_msgs_.resize(d->tx_batch_);
  for (size_t i = 0; i < d->tx_batch_; ++i) {
    d->tx_msgs_[i] = {};
    d->tx_msgs_[i].msg_hdr.msg_iov = &d->tx_iov_[i];
    d->tx_msgs_[i].msg_hdr.msg_iovlen = 1;
  }
  return d;
}

PacketDevice::~PacketDevice() { flush(); }

void PacketDevice::release_block() {
  auto* b = reinterpret_cast<tpacket_block_desc*>(ring_.data() + cur_block_ * block_size_);
  __atomic_store_n(&b->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
  cur_block_ = (cur_block_ + 1) % block_count_;
  pkt_ = nullptr;
}

tpacket2_hdr* PacketDevice::SynRing::slot() const {
  return reinterpret_cast<tpacket2_hdr*>(map.data() + cur * kSynSlot);
}

bool PacketDevice::SynRing::ready() const {
  return count != 0 && (__atomic_load_n(&slot()->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) != 0;
}

void PacketDevice::SynRing::release() {
  __atomic_store_n(&slot()->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
  cur = cur + 1 == count ? 0 : cur + 1;
}

// A SYN's turn: kSynShare main frames went since the last one, or the main ring is empty.
bool PacketDevice::syn_due() const {
  if (!syn_.ready()) return false;
  if (since_syn_ >= kSynShare) return true;
  const auto* h = reinterpret_cast<const tpacket2_hdr*>(ring_.data() + cur_frame_ * frame_size_);
  return (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) == 0;
}

Result<RxInfo> PacketDevice::receive(wire::MutBytes buf) {
  rx_release();
  if (v3_) return receive_v3(buf);
  if (syn_due()) return receive_syn(buf);
  auto r = receive_v2(buf);
  if (r && r->len == 0 && syn_.ready()) return receive_syn(buf);
  if (r && r->len != 0) ++since_syn_;
  return r;
}

// The next SYN slot holding a whole frame, or null. The filter takes only SYNs that fit a slot,
// so a truncated one cannot come; it would be skipped.
const tpacket2_hdr* PacketDevice::next_syn() {
  for (; syn_.ready(); syn_.release()) {
    const tpacket2_hdr* h = syn_.slot();
    if (h->tp_snaplen == h->tp_len) return h;
    ++counters_.rx_truncated;
  }
  return nullptr;
}

Result<RxInfo> PacketDevice::receive_syn(wire::MutBytes buf) {
  since_syn_ = 0;
  const tpacket2_hdr* h = next_syn();
  if (h == nullptr) return RxInfo{};
  const size_t len = std::min<size_t>(h->tp_len, buf.size());  // a SYN slot's frame is under 200 bytes
  std::memcpy(buf.data(), reinterpret_cast<const uint8_t*>(h) + h->tp_mac, len);
  const bool csum_ok = (h->tp_status & (TP_STATUS_CSUMNOTREADY | TP_STATUS_CSUM_VALID)) != 0;
  syn_.release();
  ++counters_.rx_syn_frames;
  return RxInfo{len, csum_ok};
}

Result<Device::RxView> PacketDevice::receive_view(wire::MutBytes buf) {
  if (v3_) return Device::receive_view(buf);
  rx_release();
  if (syn_due()) {
    since_syn_ = 0;
    if (const tpacket2_hdr* h = next_syn()) {
      held_syn_ = true;
      ++counters_.rx_syn_frames;
      return RxView{wire::Bytes(reinterpret_cast<const uint8_t*>(h) + h->tp_mac, h->tp_snaplen),
                    (h->tp_status & (TP_STATUS_CSUMNOTREADY | TP_STATUS_CSUM_VALID)) != 0};
    }
  }
  for (;;) {
    auto* h = reinterpret_cast<tpacket2_hdr*>(ring_.data() + cur_frame_ * frame_size_);
    const uint32_t st = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
    if ((st & TP_STATUS_USER) == 0) return RxView{};
    ++since_syn_;
    if ((st & TP_STATUS_COPY) != 0 || h->tp_snaplen != h->tp_len || h->tp_len > buf.size()) {
      // Larger than a slot: read whole from the socket.
      auto r = receive_v2(buf);
      if (!r) return unexpected(r.error());
      return RxView{wire::Bytes(buf.data(), r->len), r->csum_verified};
    }
    const auto* slot = reinterpret_cast<const uint8_t*>(h);
    const auto* sll = reinterpret_cast<const sockaddr_ll*>(slot + TPACKET_ALIGN(sizeof(tpacket2_hdr)));
    held_ = true;
    if (sll->sll_pkttype == PACKET_OUTGOING) {
      rx_release();
      continue;
    }
    return RxView{wire::Bytes(slot + h->tp_mac, h->tp_snaplen),
                  (st & (TP_STATUS_CSUMNOTREADY | TP_STATUS_CSUM_VALID)) != 0};
  }
}

void PacketDevice::rx_release() {
  if (held_syn_) {
    held_syn_ = false;
    syn_.release();
  }
  if (!held_) return;
  held_ = false;
  auto* h = reinterpret_cast<tpacket2_hdr*>(ring_.data() + cur_frame_ * frame_size_);
  __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
  cur_frame_ = cur_frame_ + 1 == frame_count_ ? 0 : cur_frame_ + 1;
}

Result<RxInfo> PacketDevice::receive_v2(wire::MutBytes buf) {
  for (;;) {
    auto* h = reinterpret_cast<tpacket2_hdr*>(ring_.data() + cur_frame_ * frame_size_);
    const uint32_t st = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
    if ((st & TP_STATUS_USER) == 0) return RxInfo{};
    const auto* slot = reinterpret_cast<const uint8_t*>(h);
    const auto* sll = reinterpret_cast<const sockaddr_ll*>(slot + TPACKET_ALIGN(sizeof(tpacket2_hdr)));
    const bool outgoing = sll->sll_pkttype == PACKET_OUTGOING;
    const bool csum_ok = (st & (TP_STATUS_CSUMNOTREADY | TP_STATUS_CSUM_VALID)) != 0;
    size_t len = 0;
    if ((st & TP_STATUS_COPY) != 0) {
      // The whole frame waits on the socket (queued in the same order as the slots).
      const ssize_t n = ::recv(rx_fd_.get(), buf.data(), buf.size(), MSG_DONTWAIT | MSG_TRUNC);
      ++counters_.rx_copied;
      if (n > 0 && static_cast<size_t>(n) <= buf.size())
        len = static_cast<size_t>(n);
      else
        ++counters_.rx_truncated;
    } else if (h->tp_snaplen == h->tp_len && h->tp_len <= buf.size()) {
      len = h->tp_snaplen;
      if (!outgoing) std::memcpy(buf.data(), slot + h->tp_mac, len);
    } else {
      ++counters_.rx_truncated;  // larger than a slot, and the socket's queue was full
    }
    __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);  // copied: the slot is free
    cur_frame_ = cur_frame_ + 1 == frame_count_ ? 0 : cur_frame_ + 1;
    if (len != 0 && !outgoing) return RxInfo{len, csum_ok};
  }
}

tpacket2_hdr* PacketDevice::v2_slot(size_t i) const {
  return reinterpret_cast<tpacket2_hdr*>(ring_.data() + (cur_frame_ + i) % frame_count_ * frame_size_);
}

// A large frame's slot says TP_STATUS_COPY; its skb waits on the socket, queued in slot order
// (tpacket_rcv does both at once; without room on the socket the slot has no COPY). So the
// frames of a run of COPY slots are the next ones recvmmsg reads, in that order.
bool PacketDevice::rx_peek_large(RxPeek& out, size_t i) {
  if (v3_ || i >= frame_count_) return false;
  rx_release();
  if (syn_due()) return false;  // a SYN's turn: receive_view takes it
  for (size_t k = 0; k <= i; ++k) {
    const tpacket2_hdr* h = v2_slot(k);
    const uint32_t st = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
    if ((st & TP_STATUS_USER) == 0 || (st & TP_STATUS_COPY) == 0) return false;
    const auto* slot = reinterpret_cast<const uint8_t*>(h);
    const auto* sll = reinterpret_cast<const sockaddr_ll*>(slot + TPACKET_ALIGN(sizeof(tpacket2_hdr)));
    if (sll->sll_pkttype == PACKET_OUTGOING || h->tp_snaplen >= h->tp_len) return false;
    if (k < i) continue;
    out.head = wire::Bytes(slot + h->tp_mac, h->tp_snaplen);
    out.len = h->tp_len;
    out.csum_verified = (st & (TP_STATUS_CSUMNOTREADY | TP_STATUS_CSUM_VALID)) != 0;
  }
  return true;
}

size_t PacketDevice::receive_split_run(std::span<SplitDest> d) {
  if (v3_) return 0;
  rx_release();
  const size_t k = std::min(d.size(), kMaxSplitRun);
  std::array<iovec, 2 * kMaxSplitRun> iov;
  std::array<mmsghdr, kMaxSplitRun> m{};
  std::array<size_t, kMaxSplitRun> want{};
  size_t run = 0;
  for (; run < k; ++run) {
    const tpacket2_hdr* h = v2_slot(run);
    const uint32_t st = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
    if ((st & TP_STATUS_USER) == 0 || (st & TP_STATUS_COPY) == 0) break;
    want[run] = h->tp_len;
    iov[2 * run] = {d[run].head.data(), d[run].head.size()};
    iov[2 * run + 1] = {d[run].rest.data(), d[run].rest.size()};
    m[run].msg_hdr.msg_iov = &iov[2 * run];
    m[run].msg_hdr.msg_iovlen = 2;
  }
  if (run == 0) return 0;
  int n;
  while ((n = ::recvmmsg(rx_fd_.get(), m.data(), static_cast<unsigned>(run), MSG_DONTWAIT | MSG_TRUNC,
                         nullptr)) < 0 &&
         errno == EINTR) {
  }
  ++counters_.rx_split_calls;
  if (n <= 0) {
    // Nothing queued for the first slot (cannot happen): it goes back, read as lost, as receive_split's
    // failure.
    d[0].ok = false;
    ++counters_.rx_copied;
    ++counters_.rx_truncated;
    __atomic_store_n(&v2_slot(0)->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
    cur_frame_ = cur_frame_ + 1 == frame_count_ ? 0 : cur_frame_ + 1;
    return 1;
  }
  since_syn_ += static_cast<uint32_t>(n);
  for (int i = 0; i < n; ++i) {
    d[i].ok = m[i].msg_len == want[i] && want[i] == d[i].head.size() + d[i].rest.size();
    ++counters_.rx_copied;
    ++(d[i].ok ? counters_.rx_placed : counters_.rx_truncated);
    __atomic_store_n(&v2_slot(0)->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
    cur_frame_ = cur_frame_ + 1 == frame_count_ ? 0 : cur_frame_ + 1;
  }
  return static_cast<size_t>(n);
}

Status PacketDevice::receive_split(wire::MutBytes head, wire::MutBytes rest) {
  rx_release();
  auto* h = reinterpret_cast<tpacket2_hdr*>(ring_.data() + cur_frame_ * frame_size_);
  const uint32_t st = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
  if (v3_ || (st & TP_STATUS_USER) == 0 || (st & TP_STATUS_COPY) == 0)
    return fail("packet: receive_split without a large frame waiting");
  const size_t want = h->tp_len;
  // The whole frame waits on the socket, queued in the same order as the slots.
  iovec iov[2] = {{head.data(), head.size()}, {rest.data(), rest.size()}};
  msghdr m{};
  m.msg_iov = iov;
  m.msg_iovlen = 2;
  const ssize_t n = ::recvmsg(rx_fd_.get(), &m, MSG_DONTWAIT | MSG_TRUNC);
  ++counters_.rx_copied;
  ++counters_.rx_split_calls;
  ++since_syn_;
  __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
  cur_frame_ = cur_frame_ + 1 == frame_count_ ? 0 : cur_frame_ + 1;
  if (n < 0 || static_cast<size_t>(n) != want || want != head.size() + rest.size()) {
    ++counters_.rx_truncated;
    return fail("packet: a large frame read as {} bytes, {} expected", n, want);
  }
  ++counters_.rx_placed;
  return {};
}

Result<RxInfo> PacketDevice::receive_v3(wire::MutBytes buf) {
  for (;;) {
    if (pkt_ == nullptr) {
      auto* b = reinterpret_cast<tpacket_block_desc*>(ring_.data() + cur_block_ * block_size_);
      if ((__atomic_load_n(&b->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) == 0)
        return RxInfo{};
      ++counters_.rx_blocks;
      pkts_left_ = b->hdr.bh1.num_pkts;
      pkt_ = reinterpret_cast<uint8_t*>(b) + b->hdr.bh1.offset_to_first_pkt;
      if (pkts_left_ == 0) {
        release_block();
        continue;
      }
    }
    const auto* h = reinterpret_cast<const tpacket3_hdr*>(pkt_);
    const auto* sll = reinterpret_cast<const sockaddr_ll*>(pkt_ + kSllOffset);
    const uint8_t* frame = pkt_ + h->tp_mac;
    const size_t len = h->tp_snaplen;
    const bool whole = h->tp_snaplen == h->tp_len && len <= buf.size();
    const bool outgoing = sll->sll_pkttype == PACKET_OUTGOING;
    // CSUMNOTREADY: sent on this host with the checksum left to hardware (cannot be corrupt);
    // CSUM_VALID: a device checked it.
    const bool csum_ok = (h->tp_status & (TP_STATUS_CSUMNOTREADY | TP_STATUS_CSUM_VALID)) != 0;
    if (whole && !outgoing) std::memcpy(buf.data(), frame, len);
    if (!whole) ++counters_.rx_truncated;
    if (--pkts_left_ == 0)
      release_block();  // the frame was copied: the kernel may refill the block
    else
      pkt_ += h->tp_next_offset;
    if (whole && !outgoing) return RxInfo{len, csum_ok};
  }
}

Status PacketDevice::transmit(wire::Bytes frame, const TxOffload& off) {
  return transmit_gather(frame, {}, {}, off);
}

Status PacketDevice::transmit_gather(wire::Bytes head, wire::Bytes p1, wire::Bytes p2, const TxOffload& off) {
  const size_t hdr = tx_csum_ ? sizeof(VirtioNetHdr) : 0;
  const size_t len = head.size() + p1.size() + p2.size();
  VirtioNetHdr h = virtio_hdr_for(off);
  if (len + hdr > slot_size_) {
    // A TSO super-frame: sent on its own, straight from the caller's memory (after what is
    // queued, to keep the order).
    if (off.gso_size == 0 || !tx_csum_) return fail("packet: a {}-byte frame exceeds the MTU", len);
    flush();
    const iovec iov[4] = {{&h, sizeof h},
                          {const_cast<uint8_t*>(head.data()), head.size()},
                          {const_cast<uint8_t*>(p1.data()), p1.size()},
                          {const_cast<uint8_t*>(p2.data()), p2.size()}};
    send_now(iov, 4);
    return {};
  }
  uint8_t* slot = tx_buf_.data() + tx_queued_ * slot_size_;
  if (tx_csum_) std::memcpy(slot, &h, sizeof h);
  uint8_t* at = slot + hdr;
  for (const wire::Bytes& b : {head, p1, p2}) {
    if (!b.empty()) std::memcpy(at, b.data(), b.size());
    at += b.size();
  }
  tx_iov_[tx_queued_] = {slot, hdr + len};
  if (++tx_queued_ == tx_batch_) flush();
  return {};
}

void PacketDevice::send_now(const iovec* iov, size_t n) {
  msghdr m{};
  m.msg_iov = const_cast<iovec*>(iov);
  m.msg_iovlen = n;
  ++counters_.tx_batches;
  while (sendmsg(tx_fd_.get(), &m, MSG_DONTWAIT) < 0) {
    if (errno == EINTR) continue;
    ++counters_.tx_dropped;
    break;
  }
}

wire::MutBytes PacketDevice::tx_reserve(size_t max_len) {
  const size_t hdr = tx_csum_ ? sizeof(VirtioNetHdr) : 0;
  if (max_len + hdr > slot_size_) return {};  // a super-frame: transmit() sends it on its own
  return wire::MutBytes(tx_buf_.data() + tx_queued_ * slot_size_ + hdr, max_len);
}

Status PacketDevice::tx_commit(size_t len, const TxOffload& off) {
  const size_t hdr = tx_csum_ ? sizeof(VirtioNetHdr) : 0;
  if (len + hdr > slot_size_) return fail("packet: commit of {} bytes past the slot", len);
  uint8_t* slot = tx_buf_.data() + tx_queued_ * slot_size_;
  if (tx_csum_) {
    const VirtioNetHdr h = virtio_hdr_for(off);
    std::memcpy(slot, &h, sizeof h);
  }
  tx_iov_[tx_queued_] = {slot, hdr + len};
  if (++tx_queued_ == tx_batch_) flush();
  return {};
}

void PacketDevice::flush() {
  size_t i = 0;
  while (i < tx_queued_) {
    const int n = sendmmsg(tx_fd_.get(), &tx_msgs_[i], static_cast<unsigned>(tx_queued_ - i), MSG_DONTWAIT);
    ++counters_.tx_batches;
    if (n > 0) {
      i += static_cast<size_t>(n);
    } else if (errno != EINTR) {
      ++counters_.tx_dropped;  // ENOBUFS (device queue full) and the like: a drop on the wire
      ++i;
    }
  }
  tx_queued_ = 0;
}

namespace {
uint64_t ring_drops(int fd) {
  tpacket_stats_v3 st{};
  socklen_t len = sizeof st;
  if (fd < 0 || getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) < 0) return 0;
  return st.tp_drops;
}
}  // namespace

uint64_t PacketDevice::take_ring_drops() { return ring_drops(rx_fd_.get()); }
uint64_t PacketDevice::take_syn_ring_drops() { return ring_drops(syn_fd_.get()); }

}  // namespace weft::stack
