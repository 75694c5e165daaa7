#include "stack/dev/tap_device.hpp"

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "base/random.hpp"
#include "stack/dev/virtio_net_hdr.hpp"
#include "stack/wire/ethernet.hpp"

namespace weft::stack {

namespace {

struct Tun {
  Fd fd;
  std::string name;
  std::optional<NapiSwitch> napi_switch;
};

// /dev/net/tun as TAP `o.name`, with IFF_NAPI and its set-up when `napi` is not off. A failure
// half way closes the descriptor (and with it the TAP) when `t` goes.
Result<Tun> open_tun(const TapDevice::Options& o, TapDevice::Options::Napi napi) {
  using Napi = TapDevice::Options::Napi;
  Tun t;
  t.fd.reset(::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC));
  if (!t.fd.valid()) return fail_errno("open /dev/net/tun");
  const int fd = t.fd.get();
  ifreq ifr{};
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI | (o.vnet_hdr ? IFF_VNET_HDR : 0) | (napi != Napi::off ? IFF_NAPI : 0);
  std::memcpy(ifr.ifr_name, o.name.data(), o.name.size());
  if (ioctl(fd, TUNSETIFF, &ifr) < 0)
    return fail_errno(std::string("TUNSETIFF ") + (napi != Napi::off ? "(IFF_NAPI) " : "") + o.name);
  t.name = ifr.ifr_name;
  if (o.vnet_hdr) {
    int hdr = sizeof(VirtioNetHdr);
    // Receive: the kernel may hand us frames whose checksum it left partial (its own packets),
    // and with rx_tso TCP/IPv4 super-frames whole (its TCP sends TSO-sized; without the offer it
    // cuts them into MSS frames in software, and the stack makes a read per segment: 1.6x the
    // throughput with it, docs/BENCHMARKS.md "User-space TCP/IP stack").
    const unsigned offload = TUN_F_CSUM | (o.rx_tso ? TUN_F_TSO4 : 0u);
    if (ioctl(fd, TUNSETVNETHDRSZ, &hdr) < 0 || ioctl(fd, TUNSETOFFLOAD, offload) < 0)
      return fail_errno("TUNSETVNETHDRSZ/TUNSETOFFLOAD");
  }
  if (napi == Napi::thread) {
    if (auto s = tap_threaded_napi(t.name); !s) return std::unexpected(s.error());
  } else if (napi == Napi::bulk) {
    auto sw = NapiSwitch::open(t.name);
    if (!sw) return std::unexpected(sw.error());
    if (auto s = tap_gro_off(t.name); !s) return std::unexpected(s.error());
    t.napi_switch = std::move(*sw);
  }
  return t;
}

}  // namespace

Result<std::unique_ptr<TapDevice>> TapDevice::open(const Options& o) {
  if (o.name.size() >= IFNAMSIZ)
    return fail("tap: name '{}' is longer than {} characters", o.name, IFNAMSIZ - 1);
  const bool automatic = o.napi == Options::Napi::automatic;
  Options::Napi napi = automatic ? default_napi(o) : o.napi;
  std::string napi_note;
  auto tun = open_tun(o, napi);
  if (!tun && napi != Options::Napi::off && (o.napi_fallback || automatic)) {
    // Whatever refused NAPI (the kernel, a read-only /sys), the TAP works without it.
    napi_note = tun.error().message;
    napi = Options::Napi::off;
    tun = open_tun(o, napi);
  }
  if (!tun) return std::unexpected(tun.error());
  wire::MacAddr mac = o.mac;
  if (mac.is_zero()) {
    const uint64_t r = random_u64();
    for (size_t i = 0; i < 6; ++i) mac.b[i] = static_cast<uint8_t>(r >> (8 * i));
    mac.b[0] = static_cast<uint8_t>((mac.b[0] & 0xfe) | 0x02);  // unicast, locally administered
  }
  const int fd = tun->fd.get();
  auto d = std::unique_ptr<TapDevice>(new TapDevice(std::move(tun->fd), tun->name, o.vnet_hdr, o.mtu, mac));
  d->rx_tso_ = o.vnet_hdr && o.rx_tso;
  d->napi_ = napi;
  d->napi_note_ = std::move(napi_note);
  d->napi_switch_ = std::move(tun->napi_switch);
  d->slot_size_ = (o.vnet_hdr ? sizeof(VirtioNetHdr) : 0) + wire::kEthernetHeader + o.mtu;
  d->tx_batch_ = o.tx_batch == 0 ? 1 : o.tx_batch;
  d->tx_buf_.resize(d->slot_size_ * d->tx_batch_);
  d->tx_writes_.resize(d->tx_batch_);
  if (o.io_uring && d->tx_batch_ > 1) {
    auto u = UringWriter::open(fd, d->tx_buf_.data(), d->tx_buf_.size(), static_cast<unsigned>(d->tx_batch_));
    if (u)
      d->uring_ = std::move(*u);
    else
      d->uring_note_ = u.error().message;
  }
  if (o.io_uring && !o.vnet_hdr && o.rx_batch > 1) {
    auto r = UringReader::open(fd, d->slot_size_, o.rx_batch);
    if (r)
      d->reader_ = std::move(*r);
    else
      d->rx_uring_note_ = r.error().message;
  }
  return d;
}

TapDevice::~TapDevice() {
  // The sysfs switch goes first, then the TAP (and with it the interface), then the ring.
  napi_switch_.reset();
  fd_.reset();
}

bool TapDevice::napi_threaded() const {
  return napi_ == Options::Napi::thread || (napi_switch_ && napi_switch_->threaded());
}

double TapDevice::napi_cpu_s() const {
  if (napi_switch_) return napi_switch_->cpu_s();
  if (napi_ == Options::Napi::thread) return napi_thread_cpu_s(name_).value_or(0);
  return 0;
}

void TapDevice::napi_rule(size_t frames) {
  // A switch is a write to sysfs (the kernel takes the RTNL lock, and starts a thread when turning
  // it on): rare by design, at the start and the end of a bulk transfer.
  bool want;
  if (frames >= kNapiBulkFrames) {
    napi_idle_flushes_ = 0;
    want = true;
  } else {
    if (!napi_switch_->threaded() || ++napi_idle_flushes_ < kNapiIdleFlushes) return;
    want = false;
  }
  if (want == napi_switch_->threaded()) return;
  if (auto s = napi_switch_->set(want); !s) {
    // The kernel refused (the TAP is going away, or /sys changed under us): stay inline.
    ++counters_.napi_errors;
    (void)napi_switch_->set(false);
    napi_switch_.reset();
    return;
  }
  if (want) ++counters_.napi_on;
}

Result<RxInfo> TapDevice::receive(wire::MutBytes buf) {
  if (reader_ == nullptr) return read_one(buf, {});
  // Frames of a batch go first, whoever asks: they were queued before anything still in the kernel.
  auto v = receive_view(buf);
  if (!v) return std::unexpected(v.error());
  if (v->frame.empty()) return RxInfo{};
  if (v->frame.data() != buf.data()) {
    if (v->frame.size() > buf.size())
      return fail("tap: a {}-byte frame for a {}-byte buffer", v->frame.size(), buf.size());
    std::memcpy(buf.data(), v->frame.data(), v->frame.size());
  }
  return RxInfo{v->frame.size(), v->csum_verified};
}

// A batch as long as the run of frames found waiting so far (or the last run, at its start), so a
// bulk transfer's queue is taken in few system calls while a lone frame is read alone: each read
// that finds nothing costs the kernel's io_uring issue and an empty check of the queue.
unsigned TapDevice::rx_want() const {
  const size_t run = std::max(rx_run_, rx_last_run_);
  return run < 4 ? 1u : static_cast<unsigned>(std::min<size_t>(run, reader_->max_batch()));
}

Result<Device::RxView> TapDevice::receive_view(wire::MutBytes buf) {
  if (reader_ != nullptr && rx_next_ < rx_count_) {
    ++rx_run_;
    return RxView{reader_->frame(rx_next_++), false};
  }
  rx_next_ = rx_count_ = 0;
  const unsigned want = reader_ != nullptr ? rx_want() : 1;
  if (want > 1) {
    auto got = reader_->fill(want);
    if (got) {
      ++counters_.rx_batches;
      counters_.rx_batch_frames += *got;
      rx_count_ = *got;
      if (rx_count_ > 0) {
        ++rx_run_;
        rx_next_ = 1;
        return RxView{reader_->frame(0), false};
      }
      rx_last_run_ = rx_run_;
      rx_run_ = 0;
      return RxView{};
    }
    // The kernel refused (RWF_NOWAIT on this fd, say): frame by frame from now on.
    rx_uring_note_ = got.error().message;
    reader_.reset();
  }
  auto r = read_one(buf, {});
  if (!r) return std::unexpected(r.error());
  if (r->len == 0) {
    rx_last_run_ = rx_run_;
    rx_run_ = 0;
    return RxView{};
  }
  ++rx_run_;
  return RxView{wire::Bytes(buf.data(), r->len), r->csum_verified};
}

Result<RxInfo> TapDevice::receive_scatter(wire::MutBytes head, wire::MutBytes rest) {
  return read_one(head, rest);
}

Result<RxInfo> TapDevice::read_one(wire::MutBytes head, wire::MutBytes rest) {
  VirtioNetHdr h{};
  iovec iov[3] = {{&h, sizeof h}, {head.data(), head.size()}, {rest.data(), rest.size()}};
  const int first = vnet_hdr_ ? 0 : 1;
  const int count = (rest.empty() ? 2 : 3) - first;
  for (;;) {
    const ssize_t n = readv(fd_.get(), iov + first, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return RxInfo{};
      return fail_errno("tap read " + name_);
    }
    if (!vnet_hdr_) return RxInfo{static_cast<size_t>(n), false};
    if (static_cast<size_t>(n) <= sizeof h) continue;  // header only: nothing to hand up
    if (h.gso_type != kVirtioGsoNone) {
      // A TCP/IPv4 super-frame (its IP total length covers all of it): the stack takes it as one
      // segment, as AF_PACKET's PACKET_VNET_HDR hands them up. The ECN bit says only how to cut it.
      if ((h.gso_type & ~kVirtioGsoEcn) != kVirtioGsoTcpv4 || !rx_tso_) {
        ++counters_.rx_gso_dropped;
        continue;
      }
      ++counters_.rx_gso_frames;
    }
    // NEEDS_CSUM: generated on this host, the checksum is partial but the data cannot be corrupt;
    // DATA_VALID: the kernel checked it.
    const bool ok = (h.flags & (kVirtioNeedsCsum | kVirtioDataValid)) != 0;
    return RxInfo{static_cast<size_t>(n) - sizeof h, ok};
  }
}

size_t TapDevice::vnet_len() const { return vnet_hdr_ ? sizeof(VirtioNetHdr) : 0; }

Status TapDevice::transmit(wire::Bytes frame, const TxOffload& off) {
  const wire::MutBytes slot = tx_reserve(frame.size());
  if (slot.empty()) return write_now(frame, {}, {}, off);  // a TSO super-frame (or over the MTU)
  std::memcpy(slot.data(), frame.data(), frame.size());
  return tx_commit(frame.size(), off);
}

wire::MutBytes TapDevice::tx_reserve(size_t max_len) {
  if (vnet_len() + max_len > slot_size_) return {};
  return wire::MutBytes(tx_buf_.data() + tx_queued_ * slot_size_ + vnet_len(), max_len);
}

Status TapDevice::tx_commit(size_t len, const TxOffload& off) {
  const size_t hdr = vnet_len();
  if (hdr + len > slot_size_) return fail("tap: commit of {} bytes past the slot", len);
  uint8_t* slot = tx_buf_.data() + tx_queued_ * slot_size_;
  if (vnet_hdr_) {
    const VirtioNetHdr h = virtio_hdr_for(off);
    std::memcpy(slot, &h, sizeof h);
  }
  tx_writes_[tx_queued_] = {slot, static_cast<uint32_t>(hdr + len)};
  if (++tx_queued_ == tx_batch_) flush();
  return {};
}

Status TapDevice::transmit_gather(wire::Bytes head, wire::Bytes p1, wire::Bytes p2, const TxOffload& off) {
  const size_t len = head.size() + p1.size() + p2.size();
  const wire::MutBytes slot = tx_reserve(len);
  if (slot.empty()) return write_now(head, p1, p2, off);
  uint8_t* at = slot.data();
  for (const wire::Bytes& b : {head, p1, p2}) {
    if (!b.empty()) std::memcpy(at, b.data(), b.size());
    at += b.size();
  }
  return tx_commit(len, off);
}

void TapDevice::flush() {
  if (tx_queued_ == 0) return;
  if (napi_switch_) napi_rule(tx_queued_);
  // A lone frame (a request's answer, an ACK) goes by write(): one io_uring_enter costs more than
  // one write() (bench/stack_latency.sh: 16.6 against 16.2 us median round trip).
  if (uring_ && tx_queued_ > 1) {
    const auto before = uring_->counters();
    const UringWriter::Outcome r = uring_->submit(tx_writes_.data(), tx_queued_);
    counters_.tx_frames += r.written;
    counters_.tx_would_block += r.would_block;
    counters_.tx_errors += r.failed;
    counters_.tx_syscalls += uring_->counters().submits - before.submits;
    counters_.tx_uring_late += uring_->counters().late - before.late;
  } else {
    for (size_t i = 0; i < tx_queued_; ++i) {
      ssize_t n;
      while ((n = ::write(fd_.get(), tx_writes_[i].data, tx_writes_[i].len)) < 0 && errno == EINTR) {
      }
      count_write(n);
    }
  }
  tx_queued_ = 0;
}

void TapDevice::count_write(ssize_t n) {
  ++counters_.tx_syscalls;
  if (n >= 0)
    ++counters_.tx_frames;
  else if (errno == EAGAIN)
    ++counters_.tx_would_block;  // the kernel's queue is full: like a drop on the wire
  else
    ++counters_.tx_errors;
}

Status TapDevice::write_now(wire::Bytes head, wire::Bytes p1, wire::Bytes p2, const TxOffload& off) {
  flush();  // frames keep their order
  // tun accepts GSO frames from user space whatever TUNSETOFFLOAD says.
  VirtioNetHdr h = virtio_hdr_for(off);
  iovec iov[4] = {{&h, sizeof h},
                  {const_cast<uint8_t*>(head.data()), head.size()},
                  {const_cast<uint8_t*>(p1.data()), p1.size()},
                  {const_cast<uint8_t*>(p2.data()), p2.size()}};
  const int first = vnet_hdr_ ? 0 : 1;
  ssize_t n;
  while ((n = writev(fd_.get(), iov + first, 4 - first)) < 0 && errno == EINTR) {
  }
  count_write(n);
  if (n < 0 && errno != EAGAIN) return fail_errno("tap write " + name_);
  return {};
}

}  // namespace weft::stack
