#include "rdma/queue_pair.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>

#include "base/log.hpp"
#include "rdma/error.hpp"

namespace weft::rdma {

Result<QpType> parse_qp_type(std::string_view s) {
  if (s == "rc") return QpType::rc;
  if (s == "uc") return QpType::uc;
  if (s == "ud") return QpType::ud;
  return fail("unknown QP type '{}' (rc|uc|ud)", s);
}

std::string_view to_string(QpType t) {
  switch (t) {
    case QpType::rc:
      return "rc";
    case QpType::uc:
      return "uc";
    case QpType::ud:
      return "ud";
  }
  return "?";
}

std::string_view qp_state_name(ibv_qp_state s) {
  switch (s) {
    case IBV_QPS_RESET:
      return "RESET";
    case IBV_QPS_INIT:
      return "INIT";
    case IBV_QPS_RTR:
      return "RTR";
    case IBV_QPS_RTS:
      return "RTS";
    case IBV_QPS_SQD:
      return "SQD";
    case IBV_QPS_SQE:
      return "SQE";
    case IBV_QPS_ERR:
      return "ERR";
    default:
      return "UNKNOWN";
  }
}

Result<QueuePair> QueuePair::create(const ProtectionDomain& pd, const CompletionQueue& send_cq,
                                    const CompletionQueue& recv_cq, const QpOptions& o,
                                    const SharedReceiveQueue* srq) {
  return create(pd, send_cq.shared(), recv_cq.shared(), o, srq);
}

Result<QueuePair> QueuePair::create(const ProtectionDomain& pd, const ExtendedCq& cq, const QpOptions& o) {
  return create(pd, cq.shared(), cq.shared(), o, nullptr);
}

Result<QueuePair> QueuePair::create(const ProtectionDomain& pd, std::shared_ptr<ibv_cq> send_cq,
                                    std::shared_ptr<ibv_cq> recv_cq, const QpOptions& o,
                                    const SharedReceiveQueue* srq) {
  ibv_qp_init_attr a{};
  a.send_cq = send_cq.get();
  a.recv_cq = recv_cq.get();
  a.srq = srq ? srq->raw() : nullptr;
  a.cap.max_send_wr = o.max_send_wr;
  a.cap.max_recv_wr = srq ? 0 : o.max_recv_wr;
  a.cap.max_send_sge = o.max_send_sge;
  a.cap.max_recv_sge = srq ? 0 : o.max_recv_sge;
  a.cap.max_inline_data = o.max_inline;
  a.qp_type = o.type == QpType::rc ? IBV_QPT_RC : o.type == QpType::uc ? IBV_QPT_UC : IBV_QPT_UD;
  a.sq_sig_all = o.signal_all ? 1 : 0;
  errno = 0;
  ibv_qp* qp = ibv_create_qp(pd.raw(), &a);
  if (!qp)
    return verb_error(fmt::format("ibv_create_qp {} send_wr {} recv_wr {} inline {}", to_string(o.type),
                                  o.max_send_wr, o.max_recv_wr, o.max_inline),
                      errno ? errno : EINVAL);
  // The QP holds everything it points at, so it is destroyed before any of them.
  auto keep = std::make_tuple(pd.shared(), std::move(send_cq), std::move(recv_cq),
                              srq ? srq->shared() : std::shared_ptr<ibv_srq>());
  std::shared_ptr<ibv_qp> p(qp, [keep](ibv_qp* q) {
    if (int rc = ibv_destroy_qp(q)) log().warn("ibv_destroy_qp: errno {}", rc);
  });
  return QueuePair(std::move(p), o.type, a.cap.max_inline_data);
}

QueuePair QueuePair::adopt(ibv_qp* qp, QpType type, uint32_t max_inline,
                           std::function<void(ibv_qp*)> destroy) {
  return QueuePair(std::shared_ptr<ibv_qp>(qp, std::move(destroy)), type, max_inline);
}

Status QueuePair::modify(ibv_qp_attr& attr, int mask, std::string_view to) {
  if (int rc = ibv_modify_qp(qp_.get(), &attr, mask))
    return verb_error(fmt::format("ibv_modify_qp {} qp 0x{:x} -> {}", to_string(type_), qpn(), to), rc);
  return {};
}

Status QueuePair::to_init(const ConnectOptions& o) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = o.port;
  int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
  if (type_ == QpType::ud) {
    a.qkey = o.qkey;
    mask |= IBV_QP_QKEY;
  } else {
    // UC has no RDMA READ or atomics.
    a.qp_access_flags = static_cast<unsigned>(
        type_ == QpType::uc ? (o.access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)) : o.access);
    mask |= IBV_QP_ACCESS_FLAGS;
  }
  return modify(a, mask, "INIT");
}

Status QueuePair::to_rtr(const ConnectOptions& o, const QpAddress& remote) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  int mask = IBV_QP_STATE;
  if (type_ != QpType::ud) {
    a.path_mtu = o.mtu;
    a.dest_qp_num = remote.qpn;
    a.rq_psn = remote.psn;
    a.ah_attr = make_ah_attr(o, remote.gid, remote.lid);
    mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    if (type_ == QpType::rc) {
      a.max_dest_rd_atomic = o.max_rd_atomic;
      a.min_rnr_timer = o.min_rnr_timer;
      mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    }
  }
  return modify(a, mask, "RTR");
}

Status QueuePair::to_rts(const ConnectOptions& o, uint32_t local_psn) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = local_psn;
  int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
  if (type_ == QpType::rc) {
    a.timeout = o.timeout;
    a.retry_cnt = o.retry_cnt;
    a.rnr_retry = o.rnr_retry;
    a.max_rd_atomic = o.max_rd_atomic;
    mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  }
  return modify(a, mask, "RTS");
}

Status QueuePair::connect(const ConnectOptions& o, uint32_t local_psn, const QpAddress& remote) {
  auto st = state();
  if (!st) return std::unexpected(st.error());
  if (*st == IBV_QPS_RESET)
    if (auto s = to_init(o); !s) return s;
  if (auto s = to_rtr(o, remote); !s) return s;
  return to_rts(o, local_psn);
}

Status QueuePair::to_error() {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  return modify(a, IBV_QP_STATE, "ERR");
}

Status QueuePair::reset() {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RESET;
  return modify(a, IBV_QP_STATE, "RESET");
}

Result<ibv_qp_state> QueuePair::state() const {
  ibv_qp_attr a{};
  ibv_qp_init_attr init{};
  if (int rc = ibv_query_qp(qp_.get(), &a, IBV_QP_STATE, &init))
    return verb_error(fmt::format("ibv_query_qp 0x{:x}", qpn()), rc);
  return a.qp_state;
}

Status QueuePair::post_send(std::span<SendWr> wrs) { return post_send(wrs, nullptr); }

Status QueuePair::post_send(std::span<SendWr> wrs, size_t* posted) {
  if (posted) *posted = wrs.size();
  if (wrs.empty()) return {};
  chain(wrs);
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(qp_.get(), &wrs[0].wr, &bad)) {
    auto idx = std::find_if(wrs.begin(), wrs.end(), [&](auto& w) { return &w.wr == bad; }) - wrs.begin();
    if (posted) *posted = static_cast<size_t>(idx);
    return verb_error(fmt::format("ibv_post_send qp 0x{:x} (WR {} of {}, wr_id {})", qpn(), idx, wrs.size(),
                                  bad ? bad->wr_id : 0),
                      rc);
  }
  return {};
}

Status QueuePair::post_recv(std::span<RecvWr> wrs) {
  if (wrs.empty()) return {};
  chain(wrs);
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_recv(qp_.get(), &wrs[0].wr, &bad)) {
    auto idx = std::find_if(wrs.begin(), wrs.end(), [&](auto& w) { return &w.wr == bad; }) - wrs.begin();
    return verb_error(fmt::format("ibv_post_recv qp 0x{:x} (WR {} of {})", qpn(), idx, wrs.size()), rc);
  }
  return {};
}

}  // namespace weft::rdma
