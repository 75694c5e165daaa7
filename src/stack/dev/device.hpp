#pragma once
// What the interface needs from a device (TAP, AF_PACKET, DPDK, or an in-memory pipe in tests):
// frames in and out, one at a time, non-blocking, and what the device did about checksums. A
// device may hold transmitted frames back to send them in batches: flush() sends what it holds,
// and whoever drives the stack calls it before waiting for input.
#include <cstdint>
#include <span>

#include "base/result.hpp"
#include "stack/wire/types.hpp"

namespace weft::stack {

struct RxInfo {
  size_t len = 0;              // 0: nothing waiting
  bool csum_verified = false;  // the transport checksum was checked by the device (or the sender is local)
};

// Checksum offload on transmit (virtio-net NEEDS_CSUM): the device sums from csum_start to the end
// and stores the result at csum_start + csum_offset, starting from the partial sum already there.
// TSO (gso_size > 0, only where tso_max() says so): the frame is one TCP/IPv4 super-segment with
// a partial checksum, to be cut into segments of gso_size payload bytes (virtio-net GSO_TCPV4:
// the kernel's GSO numbers the IP IDs, fixes lengths and checksums, or hands the whole frame to a
// local receiver as GRO would).
struct TxOffload {
  bool needs_csum = false;
  uint16_t csum_start = 0;
  uint16_t csum_offset = 0;
  uint16_t gso_size = 0;
  uint16_t hdr_len = 0;  // Ethernet + IP + TCP headers of a super-segment
};

// The largest TCP payload of one super-segment: an IPv4 packet of at most 65535 bytes with a
// 20-byte IP header and up to 60 bytes of TCP header.
inline constexpr size_t kMaxTsoPayload = 65535 - 20 - 60;

class Device {
 public:
  virtual ~Device() = default;
  // Copies the next frame (Ethernet header first) into `buf`.
  virtual Result<RxInfo> receive(wire::MutBytes buf) = 0;
  // The next frame in place, for devices whose frames sit in memory the stack may read (a mapped
  // ring): valid until rx_release(), which gives its place back to the device (the next receive
  // call releases it too). Devices that cannot show a frame in place copy it into `buf` and show
  // it there (what this default does). An empty frame: nothing waiting.
  struct RxView {
    wire::Bytes frame;
    bool csum_verified = false;
  };
  virtual Result<RxView> receive_view(wire::MutBytes buf) {
    auto r = receive(buf);
    if (!r) return unexpected(r.error());
    return RxView{wire::Bytes(buf.data(), r->len), r->csum_verified};
  }
  virtual void rx_release() {}
  // Frames the device has already taken from the kernel (a batch read at once) and not yet shown:
  // its fd() will not say they wait, so whoever polls drains them before waiting on it.
  virtual bool rx_pending() const { return false; }
  // Split receive, for devices where a large frame waits whole in the kernel while its first bytes
  // can be read without taking it (AF_PACKET's TPACKET_V2 ring with PACKET_COPY_THRESH): when the
  // next frame is one, rx_peek_large() shows its first bytes (at least its headers) and its full
  // length, and receive_split() then reads it with its first head.size() bytes into `head` and
  // the rest into `rest` (whose sizes must add up to that length), so the caller can put the
  // payload where it belongs (the TCP receive ring) with the kernel's one copy. Anything else
  // (false from the peek) is read with receive(). rx_peek_large(out, i) shows the i-th frame
  // after the next one, when it and every frame before it are such frames: a run of them, which
  // receive_split_run() reads with one system call where the device can (AF_PACKET: recvmmsg).
  struct RxPeek {
    wire::Bytes head;
    size_t len = 0;
    bool csum_verified = false;
  };
  virtual bool rx_peek_large(RxPeek& out, size_t i = 0) {
    (void)out;
    (void)i;
    return false;
  }
  virtual Status receive_split(wire::MutBytes head, wire::MutBytes rest) {
    (void)head;
    (void)rest;
    return fail("this device has no split receive");
  }
  struct SplitDest {
    wire::MutBytes head;
    wire::MutBytes rest;
    bool ok = false;  // set: the frame was read whole into the two pieces
  };
  // Reads the next frames, one per dest (each shown by rx_peek_large), as receive_split() does;
  // returns how many it took (a frame taken but not read whole has ok false: it is lost). The
  // frames after those it took still wait.
  virtual size_t receive_split_run(std::span<SplitDest> d) {
    size_t n = 0;
    for (; n < d.size(); ++n) d[n].ok = receive_split(d[n].head, d[n].rest).has_value();
    return n;
  }
  // Scatter receive, for devices that read a frame with one system call into memory the caller
  // names and show nothing of it before (a TAP, whose frames wait in the kernel's queue): when
  // rx_scatter() says so, receive_scatter() reads the next frame with its first head.size() bytes
  // into `head` and the rest into `rest` (a frame no longer than `head` lies all in it; one longer
  // than both is an error). The caller picks `rest` by a guess (Interface: where the payload of the
  // next in-order segment of the connection that took the last one belongs, in its receive ring)
  // and moves the bytes when the guess was wrong. A device says so only when its frames come with
  // their checksums verified (csum_verified), so that nothing has to be summed over both pieces.
  virtual bool rx_scatter() const { return false; }
  virtual Result<RxInfo> receive_scatter(wire::MutBytes head, wire::MutBytes rest) {
    (void)head;
    (void)rest;
    return fail("this device has no scatter receive");
  }
  virtual Status transmit(wire::Bytes frame, const TxOffload& off = {}) = 0;
  // Transmit in place, for devices whose frames live in memory the kernel reads directly
  // (AF_PACKET's TX ring): room for one frame of up to `max_len` bytes, which the caller builds
  // there and hands over with tx_commit(len, off) (len <= max_len). Empty when there is no room
  // in place (ring full, frame too large, or a device without it): then build the frame in your
  // own buffer and transmit() it. A reservation not committed is dropped by the next call on the
  // device; frames keep their order whichever way they go.
  virtual wire::MutBytes tx_reserve(size_t max_len) {
    (void)max_len;
    return {};
  }
  virtual Status tx_commit(size_t len, const TxOffload& off) {
    (void)len;
    (void)off;
    return fail("this device has no in-place transmit");
  }
  // Gather transmit for TSO super-frames: the frame is `head` (headers) followed by p1 and p2 (the
  // payload, in place in the send ring), handed to the kernel as they are instead of being copied
  // together first. Called only when tx_gather() says the device does it.
  virtual bool tx_gather() const { return false; }
  virtual Status transmit_gather(wire::Bytes head, wire::Bytes p1, wire::Bytes p2, const TxOffload& off) {
    (void)head;
    (void)p1;
    (void)p2;
    (void)off;
    return fail("this device has no gather transmit");
  }
  virtual void flush() {}
  virtual wire::MacAddr mac() const = 0;
  virtual size_t mtu() const = 0;  // IP packet size, without the Ethernet header
  virtual bool tx_csum_offload() const { return false; }
  virtual size_t tso_max() const { return 0; }  // TSO: the largest payload of a super-segment (0: none)
  virtual int fd() const { return -1; }         // readable when frames wait, for epoll; -1 if none
  // A second descriptor readable when frames wait (AF_PACKET's ring of bare SYNs); -1 if none.
  // Whoever waits on fd() waits on this one too.
  virtual int aux_fd() const { return -1; }
};

}  // namespace weft::stack
