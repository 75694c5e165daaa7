#pragma once
// Connection set-up through rdma_cm (librdmacm): address and route resolution, connect/accept
// with private data (up to 56 bytes each way: an EndpointInfo fits), and an RC QP made on the
// device rdma_cm picked for the address; or a UD QP (RDMA_PS_UDP: rdma_cm brings it to RTS with
// its own Q_Key, the connect is a SIDR exchange and only the active side learns the peer's QPN). The
// connection owns its PD, CQ (send and receive, with a completion channel) and QP, or shares the PD and CQ of
// another connection on the same device (CmOptions::share_with); `prepare` runs before connect/accept, to
// register memory and post receives so the peer's first SEND finds one.
#include <rdma/rdma_cma.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "rdma/completion_queue.hpp"
#include "rdma/protection_domain.hpp"
#include "rdma/queue_pair.hpp"

namespace weft::rdma {

class CmConnection;

struct CmOptions {
  int cq_depth = 128;
  QpOptions qp{};  // type rc or ud (the listener's port space must match: CmListener::listen)
  // RDMA READs/atomics each side may have outstanding (initiator_depth) and serve at once
  // (responder_resources); rdma_cm caps both at what the devices allow.
  uint8_t rd_atomic = 1;
  // The IP type of service of the connection (its GRH traffic class on RoCE), set by the active
  // side between address and route resolution as rdma_cm requires; unset: the kernel's default.
  std::optional<uint8_t> tos{};
  std::chrono::milliseconds timeout{5000};
  // Make the QP in this connection's PD, on its CQ (cq_depth is then unused), so several
  // connections' QPs share one memory registration and one poll loop (perftest's -q with -R).
  // rdma_cm must put both on the same device, else set-up fails naming the two. Null: own ones.
  const CmConnection* share_with = nullptr;
};
using CmPrepare = std::function<Status(CmConnection&)>;

namespace detail {
struct CmId;  // an rdma_cm_id with its own event channel
}

class CmConnection {
 public:
  static Result<CmConnection> connect(const std::string& host, uint16_t port,
                                      std::span<const std::byte> private_data, const CmOptions& opts,
                                      const CmPrepare& prepare = {});

  const Device& device() const { return *device_; }
  ProtectionDomain& pd() { return *pd_; }
  CompletionQueue& cq() { return *cq_; }
  QueuePair& qp() { return *qp_; }
  // UD: the Q_Key rdma_cm gave the QP (senders to it must use it); 0 for RC.
  uint32_t qkey() const { return qkey_; }
  // What the peer sent with its connect request or accept.
  std::span<const std::byte> peer_private_data() const { return peer_data_; }
  Status disconnect();

 private:
  friend class CmListener;
  CmConnection() = default;
  static Status setup(CmConnection& c, const CmOptions& opts, const CmPrepare& prepare);

  std::shared_ptr<detail::CmId> id_;  // first: destroyed after everything that uses it
  std::optional<Device> device_;
  std::optional<ProtectionDomain> pd_;
  std::optional<CompletionQueue> cq_;
  std::optional<QueuePair> qp_;
  std::vector<std::byte> peer_data_;
  uint32_t qkey_ = 0;
};

class CmListener {
 public:
  // type ud listens in rdma_cm's UDP port space (RDMA_PS_UDP), for connections with qp.type ud.
  static Result<CmListener> listen(const std::string& host, uint16_t port, QpType type = QpType::rc);
  Result<uint16_t> port() const;
  // Waits for one connect request, sets the connection up and accepts it with private_data.
  Result<CmConnection> accept(std::span<const std::byte> private_data, const CmOptions& opts,
                              const CmPrepare& prepare = {});

 private:
  std::shared_ptr<detail::CmId> id_;
};

}  // namespace weft::rdma
