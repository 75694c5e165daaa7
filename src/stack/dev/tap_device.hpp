#pragma once
// A TAP device (/dev/net/tun, IFF_TAP | IFF_NO_PI) as the stack's link: the stack owns the
// Ethernet end, the kernel side is an ordinary interface (give it the peer's address, or move it
// into a network namespace). With `vnet_hdr` every frame carries a struct virtio_net_hdr
// (IFF_VNET_HDR): the stack hands transmit checksums to the kernel (NEEDS_CSUM) and trusts
// frames the kernel marks as locally generated or already checked. The interface is not
// persistent: it disappears when the device is closed, so leaving needs no cleanup.
//
// Transmit: a tun fd has no sendmmsg, so frames wait in a preallocated batch (one slot per frame,
// the virtio header in front) and are written at flush() or when the batch is full: through
// io_uring when weft was built with liburing and the kernel allows a ring (one io_uring_enter per
// batch, the buffer registered once; see uring_writer.hpp), else with one write() per frame. The
// interface builds its segments straight into the next slot (tx_reserve/tx_commit), so a segment's
// payload is copied once, from the send ring to the slot, with its checksum summed on the way;
// transmit() copies a frame built elsewhere into the slot. A TSO super-frame is larger than a slot:
// what is queued goes first, then it is written on its own by writev, its payload gathered from
// the send ring where it lies (transmit_gather).
//
// Receive without vnet headers (one MSS per frame, as the kernel cuts them): frames are read in
// batches through io_uring where available (uring_reader.hpp: up to rx_batch reads per
// io_uring_enter, each answering EAGAIN at once when the queue is empty), else one readv() each.
// The batch grows with the run of frames found waiting, so a lone frame (a request) is still read
// with one readv().
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/fd.hpp"
#include "base/result.hpp"
#include "stack/dev/device.hpp"
#include "stack/dev/tap_napi.hpp"
#include "stack/dev/uring_reader.hpp"
#include "stack/dev/uring_writer.hpp"

namespace weft::stack {

class TapDevice final : public Device {
 public:
  struct Options {
    std::string name;  // "" lets the kernel pick (tapN)
    bool vnet_hdr = true;
    // With vnet_hdr: TSO offered to the kernel (TUN_F_TSO4), so its TCP hands the stack whole
    // super-frames (up to 64 KB, one read) instead of cutting them into MSS frames in software
    // for a read each.
    bool rx_tso = true;
    size_t mtu = 1500;
    wire::MacAddr mac;     // zero: a random locally administered address
    size_t tx_batch = 64;  // frames held for one flush (1: every frame is written at once)
    bool io_uring = true;  // batches through io_uring where available (writes; reads without vnet_hdr)
    // Without vnet_hdr: the most frames read per io_uring_enter (1: one readv() per frame).
    unsigned rx_batch = 64;
    // IFF_NAPI, GRO off (tap_napi.hpp): with `thread` the kernel's side of each frame runs in a
    // NAPI thread, not inside the stack's write; with `bulk` only while the stack writes full
    // batches (bulk_napi below). Needs /sys writable in this namespace. `automatic`, the default,
    // is what weft measured best (default_napi below), with napi_fallback: `weft stack` without
    // a NAPI flag gets the same.
    enum class Napi : uint8_t { off, thread, bulk, automatic };
    Napi napi = Napi::automatic;
    // When the NAPI set-up fails (IFF_NAPI refused, /sys read-only): open the TAP without it and
    // say why in napi_note(), instead of failing. Always so for Napi::automatic.
    bool napi_fallback = false;
  };
  // The NAPI that Napi::automatic chooses for `o`, from measurements (docs/BENCHMARKS.md,
  // "User-space TCP/IP stack"): a TAP that carries one MSS per frame (no vnet headers, or no TSO
  // offered) gets the NAPI thread for bulk sends: the kernel's per-frame receive work then leaves
  // the stack's writes (1.13-1.87x the throughput with offloads off) while requests and ACKs stay
  // inline (64 B round trips 1.01x the kernel's; 1.31-1.35x with the thread always on). With TSO
  // the thread gives nothing and IFF_NAPI alone costs: off. rx_tso stands for TSO both ways here
  // (`weft stack --no-tso` turns both off; a stack that sends super-frames writes them alone, so
  // the bulk rule would not fire anyway).
  static Options::Napi default_napi(const Options& o) {
    return !o.vnet_hdr || !o.rx_tso ? Options::Napi::bulk : Options::Napi::off;
  }
  // The bulk rule: a flush of kNapiBulkFrames frames or more turns the NAPI thread on; after
  // kNapiIdleFlushes flushes in a row with fewer it goes off again (answers and ACKs, one or two
  // frames a flush, are then written inline, without waiting for the thread). With a tx_batch
  // below kNapiBulkFrames, or TSO (a super-frame is written alone), it never fires.
  static constexpr size_t kNapiBulkFrames = 16;
  static constexpr size_t kNapiIdleFlushes = 64;
  static Result<std::unique_ptr<TapDevice>> open(const Options& o);
  ~TapDevice() override;
  TapDevice(const TapDevice&) = delete;
  TapDevice& operator=(const TapDevice&) = delete;

  Result<RxInfo> receive(wire::MutBytes buf) override;
  // Without vnet headers and with the io_uring reader: the frame in the reader's slot, no copy.
  Result<RxView> receive_view(wire::MutBytes buf) override;
  bool rx_pending() const override { return rx_next_ < rx_count_; }
  // With vnet headers (the kernel marks every frame it hands over as checked or as locally made):
  // one readv puts the frame's headers in `head` and its payload in `rest`, in a connection's
  // receive ring when the interface guessed right, so a super-frame is copied once (the kernel's
  // copy), not twice (into the interface's buffer, then into the ring).
  bool rx_scatter() const override { return vnet_hdr_; }
  Result<RxInfo> receive_scatter(wire::MutBytes head, wire::MutBytes rest) override;
  Status transmit(wire::Bytes frame, const TxOffload& off) override;
  wire::MutBytes tx_reserve(size_t max_len) override;
  Status tx_commit(size_t len, const TxOffload& off) override;
  bool tx_gather() const override { return true; }
  Status transmit_gather(wire::Bytes head, wire::Bytes p1, wire::Bytes p2, const TxOffload& off) override;
  void flush() override;
  wire::MacAddr mac() const override { return mac_; }
  size_t mtu() const override { return mtu_; }
  bool tx_csum_offload() const override { return vnet_hdr_; }
  size_t tso_max() const override { return vnet_hdr_ ? kMaxTsoPayload : 0; }
  int fd() const override { return fd_.get(); }
  const std::string& name() const { return name_; }

  struct Counters {
    uint64_t rx_gso_dropped = 0;   // super-frames of a kind not offered (UDP, IPv6; TSO4 without rx_tso)
    uint64_t rx_gso_frames = 0;    // TCP/IPv4 super-frames taken whole (rx_tso)
    uint64_t tx_would_block = 0;   // the kernel's queue was full: dropped, like a drop on the wire
    uint64_t tx_errors = 0;        // other write errors (the frame is lost; TCP retransmits)
    uint64_t tx_frames = 0;        // frames the kernel took
    uint64_t tx_syscalls = 0;      // write()/writev()/io_uring_enter calls that sent them
    uint64_t tx_uring_late = 0;    // io_uring writes that did not complete inline (io-wq worker)
    uint64_t napi_on = 0;          // Napi::bulk: times the NAPI thread was turned on
    uint64_t napi_errors = 0;      // Napi::bulk: switches the kernel refused (the rule then stops)
    uint64_t rx_batches = 0;       // io_uring_enter calls that read frames (the io_uring reader)
    uint64_t rx_batch_frames = 0;  // frames they returned
  };
  const Counters& counters() const { return counters_; }
  bool uses_io_uring() const { return uring_ != nullptr; }
  // Why io_uring is not used ("" when it is, or when it was not asked for).
  const std::string& io_uring_note() const { return uring_note_; }
  bool reads_io_uring() const { return reader_ != nullptr; }
  // Why receive does not batch through io_uring ("" when it does, or when it was not asked for).
  const std::string& rx_uring_note() const { return rx_uring_note_; }
  // The NAPI in use (never automatic: what it chose, or off after a fallback).
  Options::Napi napi() const { return napi_; }
  // Why NAPI is off although it was asked for with napi_fallback or automatic ("" otherwise).
  const std::string& napi_note() const { return napi_note_; }
  // Whether the kernel's side of the frames runs in the NAPI thread now.
  bool napi_threaded() const;
  // CPU seconds of the NAPI threads so far (0 without NAPI).
  double napi_cpu_s() const;

 private:
  TapDevice(Fd fd, std::string name, bool vnet_hdr, size_t mtu, wire::MacAddr mac)
      : fd_(std::move(fd)), name_(std::move(name)), vnet_hdr_(vnet_hdr), mtu_(mtu), mac_(mac) {}
  // Writes head + p1 + p2 (a frame too large for a slot) at once, after what is queued.
  Status write_now(wire::Bytes head, wire::Bytes p1, wire::Bytes p2, const TxOffload& off);
  size_t vnet_len() const;  // the virtio header in front of each frame (0 without vnet_hdr)
  void count_write(ssize_t n);
  void napi_rule(size_t frames);                                      // Napi::bulk: after a flush of `frames`
  Result<RxInfo> read_one(wire::MutBytes head, wire::MutBytes rest);  // one readv()
  unsigned rx_want() const;  // reads for the next batch (<= 1: one readv() instead)

  Fd fd_;
  std::string name_;
  bool vnet_hdr_;
  bool rx_tso_ = false;  // TUN_F_TSO4 offered: TCP/IPv4 super-frames are taken
  Options::Napi napi_ = Options::Napi::off;
  std::string napi_note_;
  std::optional<NapiSwitch> napi_switch_;  // Napi::bulk
  size_t napi_idle_flushes_ = 0;
  size_t mtu_;
  wire::MacAddr mac_;
  Counters counters_;
  // Transmit batch: slot i holds [virtio header if vnet_hdr] + frame; tx_writes_[i] says where.
  size_t slot_size_ = 0;
  size_t tx_batch_ = 0;
  size_t tx_queued_ = 0;
  std::vector<uint8_t> tx_buf_;
  std::vector<UringWriter::Write> tx_writes_;
  std::unique_ptr<UringWriter> uring_;
  std::string uring_note_;
  // Batched receive (no vnet_hdr): frames rx_next_..rx_count_-1 of the reader's last fill are
  // still to be shown; rx_run_ frames came since the queue was last found empty, rx_last_run_ in
  // the run before.
  std::unique_ptr<UringReader> reader_;
  std::string rx_uring_note_;
  size_t rx_next_ = 0;
  size_t rx_count_ = 0;
  size_t rx_run_ = 0;
  size_t rx_last_run_ = 0;
};

}  // namespace weft::stack
