#pragma once
// A DPDK port as the stack's device (built only when libdpdk is found: WEFT_HAVE_DPDK). Meant for
// this project's machines with Debian's DPDK 22.11 and no hugepages: EAL runs with `--no-huge
// --no-pci --no-shconf` and one virtual device, net_af_packet (an existing interface) or net_tap
// (a TAP the kernel sees); a real NIC would take the same code with other EAL arguments.
//
// One receive and one transmit queue. Receive takes bursts of up to 32 mbufs from the port and
// hands them out one frame at a time (copied out, the mbuf freed at once); transmit copies each
// frame into an mbuf (tx_reserve lets the interface build it there instead) and sends them in bursts (when 32
// are queued, or on flush()). There is no descriptor to wait on (fd() is -1): whoever drives the stack polls
// it, as DPDK intends. EAL can be initialised once per process, so only one DpdkDevice may exist.
#include <memory>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "stack/dev/device.hpp"

struct rte_mbuf;
struct rte_mempool;

namespace weft::stack {

class DpdkDevice final : public Device {
 public:
  struct Options {
    std::string vdev;                   // e.g. "net_af_packet0,iface=veth1" or "net_tap0,iface=dtap0"
    std::vector<std::string> eal_args;  // more EAL arguments, after the defaults
    size_t memory_mb = 256;             // EAL -m (no hugepages: ordinary memory)
    unsigned mbufs = 8191;              // pool size; must fit in memory_mb with the rings
  };
  static Result<std::unique_ptr<DpdkDevice>> open(const Options& o);
  ~DpdkDevice() override;
  DpdkDevice(const DpdkDevice&) = delete;
  DpdkDevice& operator=(const DpdkDevice&) = delete;

  Result<RxInfo> receive(wire::MutBytes buf) override;
  Status transmit(wire::Bytes frame, const TxOffload& off) override;
  // The frame is built in an mbuf taken from the pool (no copy from the interface's buffer).
  wire::MutBytes tx_reserve(size_t max_len) override;
  Status tx_commit(size_t len, const TxOffload& off) override;
  void flush() override;
  wire::MacAddr mac() const override { return mac_; }
  size_t mtu() const override { return mtu_; }
  const std::string& port_name() const { return port_name_; }

  struct Counters {
    uint64_t rx_bursts = 0;
    uint64_t rx_truncated = 0;  // frames longer than the stack's buffer or chained mbufs, dropped
    uint64_t tx_dropped = 0;    // no mbuf, or the port did not take them
  };
  const Counters& counters() const { return counters_; }

 private:
  DpdkDevice() = default;
  static constexpr unsigned kBurst = 32;
  uint16_t port_ = 0;
  bool started_ = false;
  std::string port_name_;
  rte_mempool* pool_ = nullptr;
  wire::MacAddr mac_;
  size_t mtu_ = 1500;
  rte_mbuf* rx_[kBurst] = {};
  unsigned rx_n_ = 0, rx_i_ = 0;
  rte_mbuf* tx_[kBurst] = {};
  unsigned tx_n_ = 0;
  rte_mbuf* reserved_ = nullptr;  // handed out by tx_reserve, not committed yet
  Counters counters_;
};

}  // namespace weft::stack
