#include "rdma/shared_receive_queue.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>

#include "base/log.hpp"
#include "rdma/error.hpp"

namespace weft::rdma {

Result<SharedReceiveQueue> SharedReceiveQueue::create(const ProtectionDomain& pd, uint32_t max_wr,
                                                      uint32_t max_sge) {
  ibv_srq_init_attr attr{};
  attr.attr.max_wr = max_wr;
  attr.attr.max_sge = max_sge;
  errno = 0;
  ibv_srq* srq = ibv_create_srq(pd.raw(), &attr);
  if (!srq) return verb_error(fmt::format("ibv_create_srq max_wr {}", max_wr), errno ? errno : ENOMEM);
  auto pdp = pd.shared();
  return SharedReceiveQueue(std::shared_ptr<ibv_srq>(srq, [pdp](ibv_srq* s) {
    if (int rc = ibv_destroy_srq(s)) log().warn("ibv_destroy_srq: errno {}", rc);
  }));
}

Status SharedReceiveQueue::post_recv(std::span<RecvWr> wrs) {
  if (wrs.empty()) return {};
  chain(wrs);
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_srq_recv(srq_.get(), &wrs[0].wr, &bad)) {
    size_t idx = static_cast<size_t>(
        std::find_if(wrs.begin(), wrs.end(), [&](auto& w) { return &w.wr == bad; }) - wrs.begin());
    return verb_error(fmt::format("ibv_post_srq_recv (WR {} of {})", idx, wrs.size()), rc);
  }
  return {};
}

Status SharedReceiveQueue::arm_limit(uint32_t limit) {
  ibv_srq_attr attr{};
  attr.srq_limit = limit;
  if (int rc = ibv_modify_srq(srq_.get(), &attr, IBV_SRQ_LIMIT))
    return verb_error(fmt::format("ibv_modify_srq limit {}", limit), rc);
  return {};
}

}  // namespace weft::rdma
