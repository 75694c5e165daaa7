#include "rdma/cm_connection.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <poll.h>

#include <cerrno>
#include <cstring>

#include "base/log.hpp"
#include "net/address.hpp"
#include "rdma/error.hpp"

namespace weft::rdma {

namespace detail {
struct CmId {
  rdma_event_channel* ch = nullptr;
  rdma_cm_id* id = nullptr;
  ~CmId() {
    if (id && rdma_destroy_id(id)) log().warn("rdma_destroy_id: {}", std::strerror(errno));
    if (ch) rdma_destroy_event_channel(ch);
  }
};
}  // namespace detail

namespace {
using detail::CmId;
using clock = std::chrono::steady_clock;

Result<rdma_event_channel*> make_channel() {
  errno = 0;
  rdma_event_channel* ch = rdma_create_event_channel();
  if (!ch) {
    int err = errno ? errno : ENODEV;
    if (err == ENODEV || err == ENOSYS)
      return no_device(fmt::format("rdma_create_event_channel: {} (no rdma_cm support in this kernel; "
                                   "use the Soft-RoCE lab, lab/rdma-guest)",
                                   std::strerror(err)),
                       err);
    return verb_error("rdma_create_event_channel", err);
  }
  return ch;
}

Result<std::shared_ptr<CmId>> make_id(QpType type) {
  auto ch = make_channel();
  if (!ch) return std::unexpected(ch.error());
  auto id = std::make_shared<CmId>();
  id->ch = *ch;
  if (rdma_create_id(id->ch, &id->id, nullptr, type == QpType::ud ? RDMA_PS_UDP : RDMA_PS_TCP)) {
    id->id = nullptr;
    return verb_error("rdma_create_id", errno);
  }
  return id;
}

// rdma_cm takes IPv4 or IPv6; an empty host listens on every address.
Result<net::SocketAddress> address(const std::string& host, uint16_t port) {
  return net::resolve(host.empty() ? "0.0.0.0" : host, port);
}

struct EventGuard {
  rdma_cm_event* ev = nullptr;
  ~EventGuard() {
    if (ev) rdma_ack_cm_event(ev);
  }
};

// Waits for the next event on ch and checks it is `want`; the caller acks it (guard).
Status expect_event(rdma_event_channel* ch, rdma_cm_event_type want, EventGuard& g,
                    std::chrono::milliseconds timeout) {
  pollfd p{ch->fd, POLLIN, 0};
  int n;
  do n = ::poll(&p, 1, static_cast<int>(timeout.count()));
  while (n < 0 && errno == EINTR);
  if (n < 0) return fail_errno("poll rdma_cm event channel");
  if (n == 0)
    return fail_errno(fmt::format("waiting for {} ({} ms)", rdma_event_str(want), timeout.count()),
                      ETIMEDOUT);
  if (rdma_get_cm_event(ch, &g.ev)) {
    g.ev = nullptr;
    return verb_error("rdma_get_cm_event", errno);
  }
  if (g.ev->event != want)
    return fail("rdma_cm: expected {}, got {} (status {}{})", rdma_event_str(want),
                rdma_event_str(g.ev->event), g.ev->status,
                g.ev->status < 0 ? fmt::format(": {}", std::strerror(-g.ev->status)) : "");
  return {};
}

rdma_conn_param conn_param(std::span<const std::byte> data, uint8_t rd_atomic) {
  rdma_conn_param p{};
  p.private_data = data.data();
  p.private_data_len = static_cast<uint8_t>(data.size());
  p.responder_resources = rd_atomic;
  p.initiator_depth = rd_atomic;
  p.retry_count = 7;
  p.rnr_retry_count = 7;
  return p;
}

// The private data an event carries: in param.ud for the UDP port space, param.conn otherwise.
std::vector<std::byte> private_of(const rdma_cm_event& ev, QpType type) {
  const void* p = type == QpType::ud ? ev.param.ud.private_data : ev.param.conn.private_data;
  const uint8_t n = type == QpType::ud ? ev.param.ud.private_data_len : ev.param.conn.private_data_len;
  auto* d = static_cast<const std::byte*>(p);
  return d ? std::vector<std::byte>(d, d + n) : std::vector<std::byte>{};
}

Status check_private(std::span<const std::byte> data, size_t max) {
  if (data.size() > max) return fail("rdma_cm private data: {} bytes, at most {}", data.size(), max);
  return {};
}
}  // namespace

Status CmConnection::setup(CmConnection& c, const CmOptions& o, const CmPrepare& prepare) {
  if (o.qp.type == QpType::uc)
    return fail("rdma_cm connections here are RC or UD (UC is not supported in librdmacm)");
  c.device_ = Device::borrow(c.id_->id->verbs);
  if (const CmConnection* s = o.share_with) {
    // librdmacm opens each device once per process, so one device means one verbs context.
    if (s->device_->raw() != c.id_->id->verbs)
      return fail("rdma_cm: this connection is on {}, the one whose PD and CQ it shares on {}",
                  c.device_->name(), s->device_->name());
    c.pd_ = s->pd_;
    c.cq_ = s->cq_;
  } else {
    auto pd = ProtectionDomain::create(*c.device_);
    if (!pd) return std::unexpected(pd.error());
    c.pd_ = std::move(*pd);
    auto ch = CompletionChannel::create(*c.device_);
    if (!ch) return std::unexpected(ch.error());
    auto cq = CompletionQueue::create(*c.device_, o.cq_depth, *ch);
    if (!cq) return std::unexpected(cq.error());
    c.cq_ = std::move(*cq);
  }
  ibv_qp_init_attr a{};
  a.send_cq = c.cq_->raw();
  a.recv_cq = c.cq_->raw();
  a.qp_type = o.qp.type == QpType::ud ? IBV_QPT_UD : IBV_QPT_RC;
  a.cap.max_send_wr = o.qp.max_send_wr;
  a.cap.max_recv_wr = o.qp.max_recv_wr;
  a.cap.max_send_sge = o.qp.max_send_sge;
  a.cap.max_recv_sge = o.qp.max_recv_sge;
  a.cap.max_inline_data = o.qp.max_inline;
  a.sq_sig_all = o.qp.signal_all ? 1 : 0;
  if (rdma_create_qp(c.id_->id, c.pd_->raw(), &a)) return verb_error("rdma_create_qp", errno);
  auto id = c.id_;
  auto keep = std::make_tuple(c.pd_->shared(), c.cq_->shared());
  c.qp_ = QueuePair::adopt(id->id->qp, o.qp.type, a.cap.max_inline_data,
                           [id, keep](ibv_qp*) { rdma_destroy_qp(id->id); });
  if (o.qp.type == QpType::ud) {
    ibv_qp_attr attr{};
    ibv_qp_init_attr init{};
    if (int err = ibv_query_qp(id->id->qp, &attr, IBV_QP_QKEY, &init))
      return verb_error("ibv_query_qp (Q_Key)", err);
    c.qkey_ = attr.qkey;
  }
  if (prepare) return prepare(c);
  return {};
}

Result<CmConnection> CmConnection::connect(const std::string& host, uint16_t port,
                                           std::span<const std::byte> private_data, const CmOptions& o,
                                           const CmPrepare& prepare) {
  if (auto s = check_private(private_data, 56); !s) return std::unexpected(s.error());
  auto dst = address(host, port);
  if (!dst) return std::unexpected(dst.error());
  CmConnection c;
  auto id = make_id(o.qp.type);
  if (!id) return std::unexpected(id.error());
  c.id_ = *id;
  const int ms = static_cast<int>(o.timeout.count());
  if (rdma_resolve_addr(c.id_->id, nullptr, dst->sa(), ms))
    return verb_error(fmt::format("rdma_resolve_addr {}", host), errno);
  {
    EventGuard g;
    if (auto s = expect_event(c.id_->ch, RDMA_CM_EVENT_ADDR_RESOLVED, g, o.timeout); !s)
      return std::unexpected(s.error());
  }
  if (o.tos) {
    uint8_t tos = *o.tos;
    if (rdma_set_option(c.id_->id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof tos))
      return verb_error(fmt::format("rdma_set_option TOS {}", tos), errno);
  }
  if (rdma_resolve_route(c.id_->id, ms)) return verb_error(fmt::format("rdma_resolve_route {}", host), errno);
  {
    EventGuard g;
    if (auto s = expect_event(c.id_->ch, RDMA_CM_EVENT_ROUTE_RESOLVED, g, o.timeout); !s)
      return std::unexpected(s.error());
  }
  if (auto s = setup(c, o, prepare); !s) return std::unexpected(s.error());
  auto param = conn_param(private_data, o.rd_atomic);
  if (rdma_connect(c.id_->id, &param))
    return verb_error(fmt::format("rdma_connect {}:{}", host, port), errno);
  EventGuard g;
  if (auto s = expect_event(c.id_->ch, RDMA_CM_EVENT_ESTABLISHED, g, o.timeout); !s)
    return std::unexpected(s.error());
  c.peer_data_ = private_of(*g.ev, o.qp.type);
  return c;
}

Status CmConnection::disconnect() {
  if (!id_ || !id_->id) return {};
  if (rdma_disconnect(id_->id)) return verb_error("rdma_disconnect", errno);
  return {};
}

Result<CmListener> CmListener::listen(const std::string& host, uint16_t port, QpType type) {
  auto addr = address(host, port);
  if (!addr) return std::unexpected(addr.error());
  auto id = make_id(type);
  if (!id) return std::unexpected(id.error());
  if (rdma_bind_addr((*id)->id, addr->sa()))
    return verb_error(fmt::format("rdma_bind_addr {}:{}", host, port), errno);
  if (rdma_listen((*id)->id, 16)) return verb_error("rdma_listen", errno);
  CmListener l;
  l.id_ = *id;
  return l;
}

Result<uint16_t> CmListener::port() const { return ntohs(rdma_get_src_port(id_->id)); }

Result<CmConnection> CmListener::accept(std::span<const std::byte> private_data, const CmOptions& o,
                                        const CmPrepare& prepare) {
  if (auto s = check_private(private_data, 196); !s) return std::unexpected(s.error());
  CmConnection c;
  rdma_cm_id* conn_id = nullptr;
  {
    EventGuard g;
    if (auto s = expect_event(id_->ch, RDMA_CM_EVENT_CONNECT_REQUEST, g, o.timeout); !s)
      return std::unexpected(s.error());
    c.peer_data_ = private_of(*g.ev, o.qp.type);
    conn_id = g.ev->id;
  }  // acked here: rdma_migrate_id waits for the id's events to be acked
  // The new id gets its own event channel, so its events do not mix with other requests.
  auto ch = make_channel();
  if (!ch) {
    rdma_reject(conn_id, nullptr, 0);
    rdma_destroy_id(conn_id);
    return std::unexpected(ch.error());
  }
  c.id_ = std::make_shared<CmId>();
  c.id_->ch = *ch;
  c.id_->id = conn_id;
  if (rdma_migrate_id(c.id_->id, c.id_->ch)) return verb_error("rdma_migrate_id", errno);
  if (auto s = CmConnection::setup(c, o, prepare); !s) {
    rdma_reject(c.id_->id, nullptr, 0);
    return std::unexpected(s.error());
  }
  auto param = conn_param(private_data, o.rd_atomic);
  if (rdma_accept(c.id_->id, &param)) return verb_error("rdma_accept", errno);
  // UD: the accept is a SIDR reply, and the passive side gets no ESTABLISHED.
  if (o.qp.type == QpType::ud) return c;
  EventGuard g;
  if (auto s = expect_event(c.id_->ch, RDMA_CM_EVENT_ESTABLISHED, g, o.timeout); !s)
    return std::unexpected(s.error());
  return c;
}

}  // namespace weft::rdma
