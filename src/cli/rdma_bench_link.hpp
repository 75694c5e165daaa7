#pragma once
// What the runs of `weft rdma bench` stand on: a device, a PD, the CQ (and with busy polling a
// receive CQ, as perftest), the QPs, the memory both sides target and each QP's peer. Two ways to make them:
//  - verbs (perftest's default): this side creates PD, CQ and QPs and connects each QP with the
//    peer's address exchanged over the TCP side channel;
//  - rdma_cm (perftest's -R): an rdma::CmConnection per QP resolves the address, creates and
//    connects the QP on the device rdma_cm picked; the first owns PD and CQ and the others (-q)
//    share them; the bench registers its memory in that PD and waits on that CQ. The buffer's address and
//    rkey still travel on the side channel, as perftest exchanges them on its own channel after the rdma_cm
//    connection.
// The bench only ever sees the result: qps(), cq(), pd() and the peers, whichever made them.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "rdma/address_handle.hpp"
#include "rdma/cm_connection.hpp"
#include "rdma/completion_queue.hpp"
#include "rdma/connect_options.hpp"
#include "rdma/device.hpp"
#include "rdma/endpoint_info.hpp"
#include "rdma/memory_region.hpp"
#include "rdma/protection_domain.hpp"
#include "rdma/queue_pair.hpp"
#include "rdma/shared_receive_queue.hpp"
#include "rdma/side_channel.hpp"

namespace weft::cli {

struct BenchLinkSpec {
  bool server = false;
  std::string bind;    // server: where rdma_cm listens (-R)
  std::string client;  // client: the server's address (-R)
  uint16_t port = 0;   // rdma_cm's port (-R): the side channel's number, in rdma_cm's own port space
  std::string device;  // -d as given ("" = any); with -R rdma_cm's choice must match it
  std::chrono::milliseconds timeout{5000};
  rdma::WaitMode mode = rdma::WaitMode::busy;
  rdma::QpOptions qp{};       // type, depths, inline, selective signalling
  rdma::ConnectOptions co{};  // verbs: port, GID index, MTU, SL, traffic class, rd_atomic
  ibv_gid my_gid{};           // verbs: the GID co.gid_index names
  uint32_t num_qps = 1;
  int cq_depth = 0;
  // Receives complete in a CQ of their own (perftest's recv_cq for SEND and WRITE_IMM), of this
  // depth; 0: in the one CQ. Busy polling only: the event modes wait on one CQ's channel.
  int recv_cq_depth = 0;
  bool use_srq = false;
  uint32_t srq_depth = 0;
  size_t mr_bytes = 0;  // the registered buffer; the peer targets [target_off, mr_bytes)
  size_t target_off = 0;
  bool rdma_cm = false;
  std::optional<uint8_t> tos{};  // -R -T: the connection's type of service
};

struct BenchLink {
  rdma::Device dev;
  std::optional<rdma::ProtectionDomain> own_pd{};      // verbs set-up
  std::optional<rdma::CompletionQueue> own_cq{};       // verbs set-up
  std::optional<rdma::CompletionQueue> own_recv_cq{};  // verbs set-up with recv_cq_depth
  std::vector<rdma::CmConnection> cms{};               // -R: one per QP; the first's PD and CQ
  std::optional<rdma::SharedReceiveQueue> srq{};
  std::vector<rdma::QueuePair> qps{};  // shares of the QPs (the connections' with -R)
  std::optional<rdma::MemoryRegion> mr{};
  std::vector<rdma::EndpointInfo> peers{};  // qps[i] talks to peers[i]
  std::optional<rdma::AddressHandle> ah{};  // UD: the peer's

  rdma::ProtectionDomain& pd() { return cms.empty() ? *own_pd : cms.front().pd(); }
  rdma::CompletionQueue& cq() { return cms.empty() ? *own_cq : cms.front().cq(); }
  // Where receives complete when not in cq().
  rdma::CompletionQueue* recv_cq() { return own_recv_cq ? &*own_recv_cq : nullptr; }
};

// Makes the link and exchanges each QP's peer over `chan`; the parameters are agreed before.
Result<BenchLink> link_bench(rdma::SideChannel& chan, rdma::Device dev, const BenchLinkSpec& spec);

}  // namespace weft::cli
