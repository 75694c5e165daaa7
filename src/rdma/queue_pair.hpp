#pragma once
// A queue pair: RC, UC or UD, its state transitions (RESET -> INIT -> RTR -> RTS, ERROR, back to
// RESET) and posting of work-request lists. Selective signalling: with signal_all false only WRs
// marked signaled() complete on the send CQ (post at least one signalled WR per send-queue depth).
#include <infiniband/verbs.h>

#include <functional>
#include <memory>
#include <span>
#include <string_view>

#include "base/result.hpp"
#include "rdma/completion_queue.hpp"
#include "rdma/connect_options.hpp"
#include "rdma/extended_cq.hpp"
#include "rdma/protection_domain.hpp"
#include "rdma/shared_receive_queue.hpp"
#include "rdma/work_request.hpp"

namespace weft::rdma {

enum class QpType { rc, uc, ud };
Result<QpType> parse_qp_type(std::string_view s);
std::string_view to_string(QpType t);
std::string_view qp_state_name(ibv_qp_state s);

struct QpOptions {
  QpType type = QpType::rc;
  uint32_t max_send_wr = 64;
  uint32_t max_recv_wr = 64;
  uint32_t max_send_sge = 1;
  uint32_t max_recv_sge = 1;
  uint32_t max_inline = 64;
  bool signal_all = true;  // false: selective signalling
};

class QueuePair {
 public:
  // srq: receives come from it (the QP's own receive queue is not used).
  static Result<QueuePair> create(const ProtectionDomain& pd, const CompletionQueue& send_cq,
                                  const CompletionQueue& recv_cq, const QpOptions& opts,
                                  const SharedReceiveQueue* srq = nullptr);
  // Sends and receives both complete on one extended CQ (the probe engine's UD endpoint).
  static Result<QueuePair> create(const ProtectionDomain& pd, const ExtendedCq& cq, const QpOptions& opts);
  // Wraps a QP someone else created (rdma_create_qp); destroy is called when the last share goes.
  static QueuePair adopt(ibv_qp* qp, QpType type, uint32_t max_inline, std::function<void(ibv_qp*)> destroy);

  ibv_qp* raw() const { return qp_.get(); }
  uint32_t qpn() const { return qp_->qp_num; }
  QpType type() const { return type_; }
  uint32_t max_inline() const { return max_inline_; }

  Status to_init(const ConnectOptions& o);
  // UD ignores remote (destinations come with each send).
  Status to_rtr(const ConnectOptions& o, const QpAddress& remote);
  Status to_rts(const ConnectOptions& o, uint32_t local_psn);
  // RESET/INIT -> RTS in one call.
  Status connect(const ConnectOptions& o, uint32_t local_psn, const QpAddress& remote);
  Status to_error();
  Status reset();
  Result<ibv_qp_state> state() const;

  Status post_send(std::span<SendWr> wrs);
  Status post_send(SendWr& wr) { return post_send(std::span<SendWr>(&wr, 1)); }
  // The same, and on failure *posted says how many WRs from the front went out: the provider takes
  // none after the one it refused, so the caller can take the rest back.
  Status post_send(std::span<SendWr> wrs, size_t* posted);
  Status post_recv(std::span<RecvWr> wrs);
  Status post_recv(RecvWr& wr) { return post_recv(std::span<RecvWr>(&wr, 1)); }

 private:
  QueuePair(std::shared_ptr<ibv_qp> qp, QpType type, uint32_t max_inline)
      : qp_(std::move(qp)), type_(type), max_inline_(max_inline) {}
  static Result<QueuePair> create(const ProtectionDomain& pd, std::shared_ptr<ibv_cq> send_cq,
                                  std::shared_ptr<ibv_cq> recv_cq, const QpOptions& opts,
                                  const SharedReceiveQueue* srq);
  Status modify(ibv_qp_attr& attr, int mask, std::string_view to);

  std::shared_ptr<ibv_qp> qp_;
  QpType type_;
  uint32_t max_inline_;
};

}  // namespace weft::rdma
