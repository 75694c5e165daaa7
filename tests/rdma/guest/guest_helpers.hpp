#pragma once
// Helpers for the tests that run inside the Soft-RoCE guest (rxe0 on 10.9.0.1, see lab/rdma-guest).
// Two QPs in one process talk through rxe's loopback, which exercises the same verbs paths as two hosts.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

#include "rdma/completion_queue.hpp"
#include "rdma/device.hpp"
#include "rdma/error.hpp"
#include "rdma/extended_cq.hpp"
#include "rdma/memory_region.hpp"
#include "rdma/protection_domain.hpp"
#include "rdma/queue_pair.hpp"

namespace wrd {

using namespace weft::rdma;
using namespace std::chrono_literals;

template <typename T>
T must(weft::Result<T> r, const char* what) {
  if (!r) throw std::runtime_error(std::string(what) + ": " + r.error().message);
  return std::move(*r);
}
inline void must(weft::Status s, const char* what) {
  if (!s) throw std::runtime_error(std::string(what) + ": " + s.error().message);
}

// This guest's address (WRD_IP from the lab, 10.9.0.1 by default).
inline std::string local_ip() {
  const char* ip = std::getenv("WRD_IP");
  return ip && *ip ? ip : "10.9.0.1";
}
inline in_addr local_in_addr() {
  in_addr a{};
  inet_pton(AF_INET, local_ip().c_str(), &a);
  return a;
}

inline Device& device() {
  static Device dev = must(Device::open(), "open RDMA device");
  return dev;
}

inline ConnectOptions connect_options() {
  ConnectOptions o;
  o.gid_index = static_cast<int>(must(device().roce_v2_gid(local_in_addr()), "RoCE v2 GID").index);
  return o;
}

inline QpAddress address_of(const QueuePair& qp, uint32_t psn) {
  QpAddress a;
  a.qpn = qp.qpn();
  a.psn = psn;
  a.gid = gid_from_ipv4(local_in_addr());
  return a;
}

// Exactly one completion within timeout, or an exception naming what went wrong.
inline ibv_wc wait_wc(CompletionQueue& cq, WaitMode mode = WaitMode::busy, std::chrono::milliseconds t = 5s) {
  ibv_wc wc{};
  int n = must(cq.wait({&wc, 1}, mode, t), "wait for completion");
  if (n == 0) throw std::runtime_error("no completion within timeout");
  return wc;
}

inline ibv_wc wait_ok(CompletionQueue& cq, WaitMode mode = WaitMode::busy) {
  ibv_wc wc = wait_wc(cq, mode);
  must(check_completion(wc), "completion");
  return wc;
}

// One side of a connection: its CQs, QP and a registered buffer.
struct Side {
  CompletionQueue scq;
  CompletionQueue rcq;
  QueuePair qp;
  MemoryRegion mr;
};

inline Side make_side(const ProtectionDomain& pd, QpOptions o = {}, size_t bytes = 4096,
                      std::shared_ptr<CompletionChannel> ch = nullptr) {
  auto scq = must(CompletionQueue::create(device(), 256, ch), "send CQ");
  auto rcq = must(CompletionQueue::create(device(), 256, ch), "recv CQ");
  auto qp = must(QueuePair::create(pd, scq, rcq, o), "QP");
  auto mr = must(MemoryRegion::allocate(pd, bytes), "MR");
  return Side{std::move(scq), std::move(rcq), std::move(qp), std::move(mr)};
}

// Brings a and b to RTS facing each other.
inline void connect_pair(Side& a, Side& b, ConnectOptions o = connect_options()) {
  must(a.qp.connect(o, 100, address_of(b.qp, 200)), "connect a");
  must(b.qp.connect(o, 200, address_of(a.qp, 100)), "connect b");
}

}  // namespace wrd
