#pragma once
// A TAP device (/dev/net/tun, IFF_TAP | IFF_NO_PI) as the stack's link: the stack owns the
// Ethernet end, the kernel side is an ordinary interface (give it the peer's address, or move it
// into a network namespace). With `vnet_hdr` every frame carries a struct virtio_net_hdr
// (IFF_VNET_HDR): the stack hands transmit checksums to the kernel (NEEDS_CSUM) and trusts
// frames the kernel marks as locally generated or already checked. The interface is not
// persistent: it disappears when the device is closed, so leaving needs no cleanup.
#include <memory>
#include <string>

#include "base/result.hpp"
#include "stack/device.hpp"

namespace weft::stack {

class TapDevice final : public Device {
 public:
  struct Options {
    std::string name;  // "" lets the kernel pick (tapN)
    bool vnet_hdr = true;
    size_t mtu = 1500;
    wire::MacAddr mac;  // zero: a random locally administered address
  };
  static Result<std::unique_ptr<TapDevice>> open(const Options& o);
  ~TapDevice() override;
  TapDevice(const TapDevice&) = delete;
  TapDevice& operator=(const TapDevice&) = delete;

  Result<RxInfo> receive(wire::MutBytes buf) override;
  Status transmit(wire::Bytes frame, const TxOffload& off) override;
  wire::MacAddr mac() const override { return mac_; }
  size_t mtu() const override { return mtu_; }
  bool tx_csum_offload() const override { return vnet_hdr_; }
  size_t tso_max() const override { return vnet_hdr_ ? kMaxTsoPayload : 0; }
  int fd() const override { return fd_; }
  const std::string& name() const { return name_; }

  struct Counters {
    uint64_t rx_gso_dropped = 0;  // super-frames the kernel should not have sent (TSO not offered)
    uint64_t tx_would_block = 0;
  };
  const Counters& counters() const { return counters_; }

 private:
  TapDevice(int fd, std::string name, bool vnet_hdr, size_t mtu, wire::MacAddr mac)
      : fd_(fd), name_(std::move(name)), vnet_hdr_(vnet_hdr), mtu_(mtu), mac_(mac) {}
  int fd_;
  std::string name_;
  bool vnet_hdr_;
  size_t mtu_;
  wire::MacAddr mac_;
  Counters counters_;
};

}  // namespace weft::stack
