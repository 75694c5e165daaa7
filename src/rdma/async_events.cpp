#include "rdma/async_events.hpp"

#include <fcntl.h>

#include <cerrno>

#include "rdma/error.hpp"

namespace weft::rdma {

Result<AsyncEvents> AsyncEvents::open(const Device& dev) {
  int fd = dev.raw()->async_fd;
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    return fail_errno("fcntl O_NONBLOCK on the device's async event fd");
  return AsyncEvents(dev);
}

int AsyncEvents::fd() const { return dev_.raw()->async_fd; }

Result<std::optional<AsyncEvent>> AsyncEvents::next() {
  ibv_async_event ev{};
  if (ibv_get_async_event(dev_.raw(), &ev) != 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return std::optional<AsyncEvent>{};
    return verb_error("ibv_get_async_event", errno);
  }
  AsyncEvent out;
  out.type = ev.event_type;
  switch (ev.event_type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      out.qp_num = ev.element.qp ? ev.element.qp->qp_num : 0;
      break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      out.srq = ev.element.srq;
      break;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_GID_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
      out.port = ev.element.port_num;
      break;
    default:
      break;
  }
  // Every event must be acknowledged, or destroying its QP/SRQ blocks for ever.
  ibv_ack_async_event(&ev);
  return std::optional<AsyncEvent>{out};
}

}  // namespace weft::rdma
