#pragma once
// An AF_XDP device: the stack owns an existing interface (a veth end in a namespace, no kernel
// address on it) through one XDP socket on one of its queues (libxdp's xsk API, Debian 12's
// libxdp 1.3 / libbpf 1.1; built only when pkg-config finds libxdp, src/stack/CMakeLists.txt).
//
// libxdp attaches its default program (xsk_def_xdp_prog: every frame of the queue to the socket,
// the others to the kernel) when the socket is made, in native mode where the driver has it (veth
// does, and then turns GSO off on its peer) and in generic (SKB) mode otherwise; deleting the
// socket detaches it. Without a bpffs libxdp loads the program alone, without its dispatcher.
// Copy mode (XDP_COPY): veth has no zero-copy. The UMEM (umem_frames.hpp) is half receive frames,
// which go from the fill ring to the RX ring and, copied out, straight back to the fill ring, and
// half transmit frames, which the interface builds segments in (tx_reserve/tx_commit) and the
// completion ring gives back. TX descriptors are kicked with sendto() per batch or on flush(); in
// copy mode the kernel sends them inside that call (at most 32 per call, so it is repeated).
// Copy mode carries no checksum state either way: the stack computes every checksum and cannot
// tell a partial one from this host from a corrupt one (the kernel end must send full ones).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/result.hpp"
#include "stack/dev/device.hpp"
#include "stack/dev/mapping.hpp"
#include "stack/dev/umem_frames.hpp"

struct xsk_socket;
struct xsk_umem;

namespace weft::stack {

class XdpDevice final : public Device {
 public:
  struct Options {
    std::string ifname;
    uint32_t queue = 0;
    bool generic = false;  // generic (SKB) mode only, without trying native first
    // UMEM frames (2 KiB, or 4 KiB for an MTU over 1778), half for receive, half for transmit.
    // 4096 receive frames: with 2048 the RX ring filled up with ACKs while the stack sent a
    // window (hundreds of "fill ring empty" drops per 3 s at ~4 Gb/s), with 4096 none.
    size_t frames = 8192;
    size_t ring = 4096;    // fill, completion, RX and TX ring entries
    size_t tx_batch = 64;  // TX descriptors per kick
  };
  static Result<std::unique_ptr<XdpDevice>> open(const Options& o);
  ~XdpDevice() override;
  XdpDevice(const XdpDevice&) = delete;
  XdpDevice& operator=(const XdpDevice&) = delete;

  Result<RxInfo> receive(wire::MutBytes buf) override;
  Status transmit(wire::Bytes frame, const TxOffload& off) override;
  wire::MutBytes tx_reserve(size_t max_len) override;  // a free UMEM frame
  Status tx_commit(size_t len, const TxOffload& off) override;
  void flush() override;
  wire::MacAddr mac() const override { return mac_; }
  size_t mtu() const override { return mtu_; }
  int fd() const override { return fd_; }

  const std::string& name() const { return name_; }
  bool native() const { return native_; }  // false: generic (SKB) mode
  uint32_t prog_id() const { return prog_id_; }
  uint32_t queue() const { return queue_; }
  size_t frame_size() const { return umem_frames_.frame_size(); }

  struct Counters {
    uint64_t rx_frames = 0;
    uint64_t rx_too_long = 0;  // frames larger than the caller's buffer, dropped
    uint64_t tx_frames = 0;
    uint64_t tx_kicks = 0;    // sendto() calls
    uint64_t tx_dropped = 0;  // no free frame or TX slot even after a kick
  };
  const Counters& counters() const { return counters_; }
  // The kernel's side (XDP_STATISTICS): frames it could not hand over and why.
  struct KernelStats {
    uint64_t rx_dropped = 0;
    uint64_t rx_ring_full = 0;        // the RX ring was full: the stack did not read fast enough
    uint64_t rx_fill_ring_empty = 0;  // no frame on the fill ring to receive into
    uint64_t tx_invalid = 0;          // TX descriptors the kernel refused
  };
  KernelStats kernel_stats() const;

 private:
  XdpDevice(size_t frames, size_t frame_size, size_t rx_frames);
  void drop_reservation();
  void reclaim();  // completion ring -> free transmit frames
  void kick();     // sendto() until the TX ring is drained or the kernel says stop
  size_t tx_pending() const;

  std::string name_;
  uint32_t queue_ = 0;
  size_t mtu_ = 1500;
  wire::MacAddr mac_;
  bool native_ = false;
  uint32_t prog_id_ = 0;
  int fd_ = -1;   // the XDP socket's, owned by xsk_
  Mapping area_;  // the UMEM's memory: unmapped after the destructor's body deleted the UMEM
  size_t ring_ = 0;
  size_t tx_batch_ = 0;
  size_t tx_queued_ = 0;  // committed since the last kick
  std::optional<uint64_t> reserved_;
  UmemFrames umem_frames_;
  // libxdp's ring structs, kept opaque here (xdp/xsk.h stays out of the interface).
  struct Rings;
  std::unique_ptr<Rings> r_;
  xsk_umem* umem_ = nullptr;
  xsk_socket* xsk_ = nullptr;
  Counters counters_;
};

}  // namespace weft::stack
