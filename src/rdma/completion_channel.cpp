#include "rdma/completion_channel.hpp"

#include <fcntl.h>
#include <poll.h>

#include <cerrno>

#include "base/log.hpp"
#include "rdma/error.hpp"

namespace weft::rdma {

Result<std::shared_ptr<CompletionChannel>> CompletionChannel::create(const Device& dev) {
  errno = 0;
  ibv_comp_channel* ch = ibv_create_comp_channel(dev.raw());
  if (!ch) return verb_error("ibv_create_comp_channel " + dev.name(), errno ? errno : ENOMEM);
  return std::shared_ptr<CompletionChannel>(new CompletionChannel(dev.shared(), ch));
}

CompletionChannel::~CompletionChannel() {
  if (int rc = ibv_destroy_comp_channel(ch_)) log().warn("ibv_destroy_comp_channel: errno {}", rc);
}

Status CompletionChannel::set_nonblocking(bool on) {
  int flags = fcntl(ch_->fd, F_GETFL);
  if (flags < 0) return fail_errno("fcntl F_GETFL completion channel");
  flags = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (fcntl(ch_->fd, F_SETFL, flags) < 0) return fail_errno("fcntl F_SETFL completion channel");
  return {};
}

Result<ibv_cq*> CompletionChannel::get_event(std::chrono::milliseconds timeout) {
  if (timeout.count() >= 0) {
    // The blocking read itself has no timeout; wait for readability first so nothing hangs.
    pollfd p{ch_->fd, POLLIN, 0};
    int n;
    do n = ::poll(&p, 1, static_cast<int>(timeout.count()));
    while (n < 0 && errno == EINTR);
    if (n < 0) return fail_errno("poll completion channel");
    if (n == 0) return nullptr;
  }
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  if (ibv_get_cq_event(ch_, &cq, &ctx) != 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return nullptr;
    return verb_error("ibv_get_cq_event", errno);
  }
  ibv_ack_cq_events(cq, 1);
  return cq;
}

}  // namespace weft::rdma
