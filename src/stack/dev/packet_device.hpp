#pragma once
// An AF_PACKET device: the stack owns an existing Ethernet interface (typically a veth end in a
// namespace, with no address of the kernel's on it) through two packet sockets.
//
// Receive: a ring mapped into the process, so a burst of frames costs no system call at all;
// receive() copies one frame out of the ring per call. Two kinds (Options::rx_ring):
// - TPACKET_V2 (the default): fixed slots of one frame each, handed over one by one, and the
//   socket turns readable (the kernel wakes a waiting poll) for each frame. A frame larger than a
//   slot (a GRO/GSO super-frame from a local sender) is queued whole on the socket as well
//   (PACKET_COPY_THRESH) and its slot says TP_STATUS_COPY: receive() reads it with one recv().
// - TPACKET_V3: blocks packed with frames of their real size; the kernel hands a whole block over
//   when it is full or `block_timeout_ms` (at least 1 ms) after its first frame, and wakes a
//   waiting poll only then. Nothing retires a block sooner (not poll, not the socket), so a lone
//   frame, a request or the ACK a sender waits for, sits in the ring for up to that millisecond:
//   64 B request/response took ~1 ms, 34x the kernel's (docs/stack.md). Kept for comparison.
// Outgoing frames are not looped back (PACKET_IGNORE_OUTGOING).
// Bare SYNs (IPv4 TCP, SYN without ACK or RST, small enough for a 256-byte slot) go to a ring of
// their own (Options::syn_ring_blocks; V2 only): a classic BPF filter on each socket splits them.
// A SYN flood then fills that ring, not the one established connections' frames come through,
// and the same memory holds 8 times as many SYNs as 2 KiB slots would (a 4 MiB ring: 16,384).
// When both have frames, one SYN is taken after every kSynShare other frames (a flood cannot
// starve established traffic, nor bulk traffic new connections). Its socket is aux_fd().
// Transmit: frames are queued in a preallocated batch and sent with one sendmmsg() per batch (when
// it is full, or on flush()), on a second socket with PACKET_QDISC_BYPASS (straight to the driver,
// like a NIC queue owned by the stack) and PACKET_VNET_HDR (the kernel finishes TCP checksums,
// virtio-net NEEDS_CSUM, as on the TAP). The interface builds frames straight into the batch slots
// (tx_reserve). sendmmsg copies each frame into its skb, so a slot is free again at once. A TX ring
// (PACKET_TX_RING) would skip that copy only on real hardware: its frames go out as zero-copy page
// fragments (SKBFL_ZEROCOPY_FRAG), which the kernel copies into fresh pages (skb_copy_ubufs) before
// a veth hands them to another namespace, so on the veth paths measured here it would trade one
// copy for a page allocation per frame (read in the kernel's source, not measured).
//
// With no MAC given the stack takes a random locally administered one. With any MAC other than
// the interface's own it puts the interface in promiscuous mode, so the kernel drops the stack's
// frames early (PACKET_OTHERHOST) instead of routing them. Promiscuous mode is a socket
// membership: it ends when the device is closed, so leaving needs no cleanup.
#include <sys/socket.h>
#include <sys/uio.h>

#include <memory>
#include <string>
#include <vector>

#include "base/fd.hpp"
#include "base/result.hpp"
#include "stack/dev/device.hpp"
#include "stack/dev/mapping.hpp"

struct tpacket2_hdr;

namespace weft::stack {

class PacketDevice final : public Device {
 public:
  struct Options {
    std::string ifname;
    wire::MacAddr mac;  // zero: random; not the interface's own: the interface goes promiscuous
    enum class Ring { v2, v3 };
    Ring rx_ring = Ring::v2;
    // Receive ring: block_count blocks of block_size bytes (a multiple of the page size). 64 x
    // 64 KiB holds about 2,000 full-size frames (V2: 2 KiB slots for a 1500-byte MTU); a block
    // fills in ~0.3 ms at 2 Gb/s.
    size_t block_size = 64 * 1024;
    size_t block_count = 64;
    unsigned block_timeout_ms = 1;  // V3: a partly filled block goes to the stack after this long
    // The ring of bare SYNs: blocks of block_size bytes in 256-byte slots (0: none, SYNs share the
    // main ring). 64 x 64 KiB: 16,384 SYNs, about 16 ms of a million SYNs a second.
    size_t syn_ring_blocks = 64;
    size_t tx_batch = 64;  // frames per sendmmsg
    bool qdisc_bypass = true;
    bool tx_csum_offload = true;
  };
  static Result<std::unique_ptr<PacketDevice>> open(const Options& o);
  ~PacketDevice() override;
  PacketDevice(const PacketDevice&) = delete;
  PacketDevice& operator=(const PacketDevice&) = delete;

  Result<RxInfo> receive(wire::MutBytes buf) override;
  // V2: a frame that fits its slot is shown in the slot (no copy); the slot goes back at rx_release().
  Result<RxView> receive_view(wire::MutBytes buf) override;
  void rx_release() override;
  // V2: a frame larger than a slot (TP_STATUS_COPY) shows the slot's part of it (the headers).
  bool rx_peek_large(RxPeek& out, size_t i = 0) override;
  Status receive_split(wire::MutBytes head, wire::MutBytes rest) override;
  // Up to kMaxSplitRun large frames with one recvmmsg (the socket queues them in slot order).
  size_t receive_split_run(std::span<SplitDest> d) override;
  static constexpr size_t kMaxSplitRun = 16;
  Status transmit(wire::Bytes frame, const TxOffload& off) override;
  // The next batch slot: the interface builds the frame there (no copy from its own buffer).
  wire::MutBytes tx_reserve(size_t max_len) override;
  Status tx_commit(size_t len, const TxOffload& off) override;
  // Super-frames go out with one sendmsg of four pieces: virtio header, headers, payload x 2.
  bool tx_gather() const override { return tx_csum_; }
  Status transmit_gather(wire::Bytes head, wire::Bytes p1, wire::Bytes p2, const TxOffload& off) override;
  void flush() override;
  wire::MacAddr mac() const override { return mac_; }
  size_t mtu() const override { return mtu_; }
  bool tx_csum_offload() const override { return tx_csum_; }
  size_t tso_max() const override { return tx_csum_ ? kMaxTsoPayload : 0; }
  int fd() const override { return rx_fd_.get(); }
  int aux_fd() const override { return syn_fd_.get(); }  // the SYN ring's socket; -1 without one
  const std::string& name() const { return name_; }
  bool promiscuous() const { return promisc_; }
  // Whether transmissions skip the qdisc (PACKET_QDISC_BYPASS): asked for and the interface does
  // TSO itself. Without TSO the kernel must cut super-frames in software (GSO), which the bypass
  // path cannot do: __dev_direct_xmit drops any frame validate_xmit_skb had to replace.
  bool qdisc_bypass() const { return bypass_; }
  Options::Ring rx_ring() const { return v3_ ? Options::Ring::v3 : Options::Ring::v2; }
  size_t rx_slot_size() const { return v3_ ? block_size_ : frame_size_; }
  size_t syn_ring_slots() const { return syn_.count; }
  static constexpr size_t kSynSlot = 256;
  static constexpr uint32_t kSynShare = 4;

  struct Counters {
    uint64_t rx_blocks = 0;       // V3: ring blocks handed to the stack
    uint64_t rx_copied = 0;       // V2: frames larger than a slot, read whole with recv()
    uint64_t rx_placed = 0;       // of those, read with their payload straight into its place (receive_split)
    uint64_t rx_split_calls = 0;  // system calls that read them (recvmsg, or recvmmsg for a run)
    uint64_t rx_truncated = 0;    // frames larger than the ring's frames (GSO super-frames), dropped
    uint64_t rx_syn_frames = 0;   // frames taken from the SYN ring
    uint64_t tx_batches = 0;      // sendmmsg calls
    uint64_t tx_dropped = 0;      // frames the kernel would not take (device queue full)
  };
  const Counters& counters() const { return counters_; }
  // Frames the kernel dropped because the ring was full (PACKET_STATISTICS; reading resets it).
  uint64_t take_ring_drops();
  uint64_t take_syn_ring_drops();  // the same for the SYN ring
  // Gives up the claim on the interface (interface_claim.hpp) without closing the device: a fork's
  // child, which inherited it but has no stack, must not keep it once its parent is gone.
  void release_claim() { claim_.reset(); }

 private:
  PacketDevice() = default;
  void release_block();
  tpacket2_hdr* v2_slot(size_t i) const;  // the i-th slot from cur_frame_
  Result<RxInfo> receive_v2(wire::MutBytes buf);
  Result<RxInfo> receive_v3(wire::MutBytes buf);
  void send_now(const iovec* iov, size_t n);
  // The SYN ring: a V2 ring of kSynSlot-byte slots.
  struct SynRing {
    Mapping map;
    size_t count = 0;
    size_t cur = 0;
    tpacket2_hdr* slot() const;
    bool ready() const;  // its next slot holds a frame
    void release();      // gives the slot at cur back and moves on
  };
  bool syn_due() const;  // the next frame comes from the SYN ring
  const tpacket2_hdr* next_syn();
  Result<RxInfo> receive_syn(wire::MutBytes buf);

  Fd claim_;  // one stack per interface per namespace
  Fd rx_fd_;
  Fd tx_fd_;
  std::string name_;
  size_t mtu_ = 1500;
  wire::MacAddr mac_;
  bool promisc_ = false;
  bool tx_csum_ = false;
  bool bypass_ = false;
  // Receive ring.
  Mapping ring_;
  size_t block_size_ = 0;
  size_t block_count_ = 0;
  size_t cur_block_ = 0;
  bool v3_ = false;
  size_t frame_size_ = 0;  // V2: one slot
  size_t frame_count_ = 0;
  size_t cur_frame_ = 0;
  bool held_ = false;      // V2: receive_view() showed the slot at cur_frame_; rx_release() gives it back
  bool held_syn_ = false;  // the same for the SYN ring's slot
  Fd syn_fd_;
  SynRing syn_;
  uint32_t since_syn_ = 0;  // frames taken from the main ring since the last SYN
  uint8_t* pkt_ = nullptr;  // next frame in the current block; null when no block is held
  uint32_t pkts_left_ = 0;
  // Transmit batch: slot i holds a virtio_net_hdr then the frame.
  size_t slot_size_ = 0;
  size_t tx_batch_ = 0;
  size_t tx_queued_ = 0;
  std::vector<uint8_t> tx_buf_;
  std::vector<iovec> tx_iov_;
  std::vector<mmsghdr> tx_msgs_;
  Counters counters_;
};

}  // namespace weft::stack
