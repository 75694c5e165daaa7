#include "stack/dev/dpdk_device.hpp"

#include <fmt/format.h>
#include <pthread.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace weft::stack {

namespace {
std::atomic<bool> g_eal_used{false};  // EAL initialises once per process, and not again after cleanup
}

Result<std::unique_ptr<DpdkDevice>> DpdkDevice::open(const Options& o) {
  if (o.vdev.empty())
    return fail("dpdk: a virtual device is needed (net_af_packet0,iface=IF or net_tap0,iface=NAME)");
  if (g_eal_used.exchange(true)) return fail("dpdk: EAL was already initialised in this process");
  // EAL keeps pointers into argv, so the strings live as long as the process.
  static std::vector<std::string> args;
  static std::vector<char*> argv;
  args = {"weft",
          "--no-huge",
          "-m",
          std::to_string(o.memory_mb),
          "--no-pci",
          "--no-shconf",
          fmt::format("--file-prefix=weft{}", getpid()),
          "--log-level=*:warning",
          "--no-telemetry",
          "--vdev=" + o.vdev};
  args.insert(args.end(), o.eal_args.begin(), o.eal_args.end());
  argv.clear();
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // EAL pins the calling thread to its main lcore; the stack shares this machine, so it keeps the
  // affinity it had.
  cpu_set_t before;
  const bool had_affinity = pthread_getaffinity_np(pthread_self(), sizeof before, &before) == 0;
  if (rte_eal_init(static_cast<int>(args.size()), argv.data()) < 0)
    return fail("dpdk: rte_eal_init: {}", rte_strerror(rte_errno));
  if (had_affinity) pthread_setaffinity_np(pthread_self(), sizeof before, &before);

  std::unique_ptr<DpdkDevice> d(new DpdkDevice());
  d->port_name_ = o.vdev.substr(0, o.vdev.find(','));
  if (rte_eth_dev_get_port_by_name(d->port_name_.c_str(), &d->port_) != 0)
    return fail("dpdk: no port named {} after EAL start", d->port_name_);
  d->pool_ = rte_pktmbuf_pool_create("weft_mbufs", o.mbufs, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                     static_cast<int>(rte_socket_id()));
  if (d->pool_ == nullptr) return fail("dpdk: mbuf pool of {}: {}", o.mbufs, rte_strerror(rte_errno));
  rte_eth_conf conf{};
  if (int rc = rte_eth_dev_configure(d->port_, 1, 1, &conf); rc != 0)
    return fail("dpdk: configure {}: {}", d->port_name_, rte_strerror(-rc));
  uint16_t nrx = 1024, ntx = 1024;
  rte_eth_dev_adjust_nb_rx_tx_desc(d->port_, &nrx, &ntx);
  const int sock = rte_eth_dev_socket_id(d->port_);
  if (int rc = rte_eth_rx_queue_setup(d->port_, 0, nrx, static_cast<unsigned>(sock), nullptr, d->pool_);
      rc != 0)
    return fail("dpdk: rx queue: {}", rte_strerror(-rc));
  if (int rc = rte_eth_tx_queue_setup(d->port_, 0, ntx, static_cast<unsigned>(sock), nullptr); rc != 0)
    return fail("dpdk: tx queue: {}", rte_strerror(-rc));
  if (int rc = rte_eth_dev_start(d->port_); rc != 0) return fail("dpdk: start: {}", rte_strerror(-rc));
  d->started_ = true;
  rte_eth_promiscuous_enable(d->port_);  // the stack's MAC is the port's; best effort
  rte_ether_addr a{};
  rte_eth_macaddr_get(d->port_, &a);
  std::memcpy(d->mac_.b.data(), a.addr_bytes, 6);
  uint16_t mtu = 1500;
  if (rte_eth_dev_get_mtu(d->port_, &mtu) == 0) d->mtu_ = mtu;
  return d;
}

DpdkDevice::~DpdkDevice() {
  if (reserved_ != nullptr) rte_pktmbuf_free(reserved_);
  if (started_) {
    flush();
    for (unsigned i = rx_i_; i < rx_n_; ++i) rte_pktmbuf_free(rx_[i]);
    rte_eth_dev_stop(port_);
    rte_eth_dev_close(port_);
  }
  if (pool_ != nullptr) rte_mempool_free(pool_);
  // EAL leaves its (empty, with --no-shconf) runtime directory behind: one per process here.
  const std::string run_dir = rte_eal_get_runtime_dir();
  rte_eal_cleanup();
  ::rmdir(run_dir.c_str());
}

Result<RxInfo> DpdkDevice::receive(wire::MutBytes buf) {
  for (;;) {
    if (rx_i_ == rx_n_) {
      rx_n_ = rte_eth_rx_burst(port_, 0, rx_, kBurst);
      rx_i_ = 0;
      if (rx_n_ == 0) return RxInfo{};
      ++counters_.rx_bursts;
    }
    rte_mbuf* m = rx_[rx_i_++];
    const size_t len = rte_pktmbuf_pkt_len(m);
    const bool fits = m->nb_segs == 1 && len <= buf.size();
    const bool good = (m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_GOOD;
    if (fits) std::memcpy(buf.data(), rte_pktmbuf_mtod(m, const uint8_t*), len);
    rte_pktmbuf_free(m);
    if (fits) return RxInfo{len, good};
    ++counters_.rx_truncated;
  }
}

Status DpdkDevice::transmit(wire::Bytes frame, const TxOffload&) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (m == nullptr) {
    ++counters_.tx_dropped;
    return {};
  }
  char* p = rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size()));
  if (p == nullptr) {
    rte_pktmbuf_free(m);
    return fail("dpdk: a {}-byte frame does not fit an mbuf", frame.size());
  }
  std::memcpy(p, frame.data(), frame.size());
  tx_[tx_n_++] = m;
  if (tx_n_ == kBurst) flush();
  return {};
}

wire::MutBytes DpdkDevice::tx_reserve(size_t max_len) {
  if (reserved_ == nullptr) reserved_ = rte_pktmbuf_alloc(pool_);  // else the last one was not used
  if (reserved_ == nullptr || rte_pktmbuf_tailroom(reserved_) < max_len) return {};
  return wire::MutBytes(rte_pktmbuf_mtod(reserved_, uint8_t*), max_len);
}

Status DpdkDevice::tx_commit(size_t len, const TxOffload&) {
  if (reserved_ == nullptr || rte_pktmbuf_append(reserved_, static_cast<uint16_t>(len)) == nullptr)
    return fail("dpdk: commit of {} bytes without room reserved", len);
  tx_[tx_n_++] = reserved_;
  reserved_ = nullptr;
  if (tx_n_ == kBurst) flush();
  return {};
}

void DpdkDevice::flush() {
  unsigned sent = 0;
  // A few tries for a full queue, then the rest is a drop on the wire.
  for (int tries = 0; sent < tx_n_ && tries < 4; ++tries)
    sent += rte_eth_tx_burst(port_, 0, tx_ + sent, static_cast<uint16_t>(tx_n_ - sent));
  for (unsigned i = sent; i < tx_n_; ++i) rte_pktmbuf_free(tx_[i]);
  counters_.tx_dropped += tx_n_ - sent;
  tx_n_ = 0;
}

}  // namespace weft::stack
