#pragma once
// A device's asynchronous events (ibv_get_async_event): a QP gone fatal (IBV_EVENT_QP_FATAL, the
// peer's or our own transport error), an SRQ whose free receives fell below the limit armed with
// SharedReceiveQueue::arm_limit (IBV_EVENT_SRQ_LIMIT_REACHED), port changes. Nothing else reports
// these: a QP can go to ERROR with no work request outstanding to complete in error.
//
// The device context has one async event fd; AsyncEvents makes it non-blocking, so fd() can sit
// in an epoll set (CqPoller) and next() never blocks.
#include <infiniband/verbs.h>

#include <optional>
#include <string_view>

#include "base/result.hpp"
#include "rdma/device.hpp"

namespace weft::rdma {

struct AsyncEvent {
  ibv_event_type type{};
  uint32_t qp_num = 0;     // QP events
  ibv_srq* srq = nullptr;  // SRQ events
  int port = 0;            // port events
  std::string_view name() const { return ibv_event_type_str(type); }
  bool qp_fatal() const {
    return type == IBV_EVENT_QP_FATAL || type == IBV_EVENT_QP_REQ_ERR || type == IBV_EVENT_QP_ACCESS_ERR;
  }
};

class AsyncEvents {
 public:
  static Result<AsyncEvents> open(const Device& dev);
  int fd() const;
  // The next event if one is pending (acknowledged already), nullopt if none.
  Result<std::optional<AsyncEvent>> next();

 private:
  explicit AsyncEvents(Device dev) : dev_(std::move(dev)) {}
  Device dev_;
};

}  // namespace weft::rdma
