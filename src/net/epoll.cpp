#include "net/epoll.hpp"

#include <sys/eventfd.h>

#include "base/clock.hpp"

namespace weft::net {

Result<Epoll> Epoll::create() {
  Epoll e;
  e.fd_.reset(epoll_create1(EPOLL_CLOEXEC));
  if (!e.fd_.valid()) return fail_errno("epoll_create1");
  return e;
}

Status Epoll::add(int fd, uint32_t events, uint64_t data) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = data;
  if (epoll_ctl(fd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) return fail_errno("epoll_ctl(ADD)");
  return {};
}

Status Epoll::modify(int fd, uint32_t events, uint64_t data) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = data;
  if (epoll_ctl(fd_.get(), EPOLL_CTL_MOD, fd, &ev) != 0) return fail_errno("epoll_ctl(MOD)");
  return {};
}

void Epoll::remove(int fd) { epoll_ctl(fd_.get(), EPOLL_CTL_DEL, fd, nullptr); }

Result<int> Epoll::wait(epoll_event* events, int max_events, int64_t timeout_ns) {
  timespec ts = ns_timespec(timeout_ns < 0 ? 0 : timeout_ns);
  int n = epoll_pwait2(fd_.get(), events, max_events, timeout_ns < 0 ? nullptr : &ts, nullptr);
  if (n < 0) {
    if (errno == EINTR) return 0;
    return fail_errno("epoll_pwait2");
  }
  return n;
}

Result<EventFd> EventFd::create() {
  EventFd e;
  e.fd_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!e.fd_.valid()) return fail_errno("eventfd");
  return e;
}

void EventFd::signal() {
  uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(fd_.get(), &one, sizeof one);
}

void EventFd::drain() {
  uint64_t v;
  while (::read(fd_.get(), &v, sizeof v) > 0) {
  }
}

}  // namespace weft::net
