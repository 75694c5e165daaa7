#pragma once
// A shared receive queue (ibv_srq): one pool of receive buffers for many QPs.
#include <infiniband/verbs.h>

#include <memory>
#include <span>

#include "base/result.hpp"
#include "rdma/protection_domain.hpp"
#include "rdma/work_request.hpp"

namespace weft::rdma {

class SharedReceiveQueue {
 public:
  static Result<SharedReceiveQueue> create(const ProtectionDomain& pd, uint32_t max_wr, uint32_t max_sge = 1);
  ibv_srq* raw() const { return srq_.get(); }
  const std::shared_ptr<ibv_srq>& shared() const { return srq_; }

  Status post_recv(std::span<RecvWr> wrs);
  Status post_recv(RecvWr& wr) { return post_recv(std::span<RecvWr>(&wr, 1)); }
  // Raises one IBV_EVENT_SRQ_LIMIT_REACHED (AsyncEvents) when fewer than `limit` receives remain
  // posted; the limit disarms itself when it fires, so re-arm after refilling.
  Status arm_limit(uint32_t limit);

 private:
  explicit SharedReceiveQueue(std::shared_ptr<ibv_srq> s) : srq_(std::move(s)) {}
  std::shared_ptr<ibv_srq> srq_;
};

}  // namespace weft::rdma
