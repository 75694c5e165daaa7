#include "net/epoll.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>

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

namespace {
// epoll_pwait2 (nanosecond timeouts) came with Linux 5.11; older kernels, and tools such as
// valgrind that do not know it, answer ENOSYS. Then epoll_wait with the timeout rounded up to
// whole milliseconds: a wait may end up to 1 ms late, never early.
std::atomic<bool> have_pwait2{true};

int wait_ms(int epfd, epoll_event* events, int max_events, int64_t timeout_ns) {
  if (timeout_ns < 0) return epoll_wait(epfd, events, max_events, -1);
  const int64_t ms = std::min<int64_t>((timeout_ns + 999'999) / 1'000'000, INT32_MAX);
  return epoll_wait(epfd, events, max_events, static_cast<int>(ms));
}
}  // namespace

Result<int> Epoll::wait(epoll_event* events, int max_events, int64_t timeout_ns) {
  int n;
  if (have_pwait2.load(std::memory_order_relaxed)) {
    timespec ts = ns_timespec(timeout_ns < 0 ? 0 : timeout_ns);
    n = epoll_pwait2(fd_.get(), events, max_events, timeout_ns < 0 ? nullptr : &ts, nullptr);
    if (n < 0 && errno == ENOSYS) {
      have_pwait2.store(false, std::memory_order_relaxed);
      n = wait_ms(fd_.get(), events, max_events, timeout_ns);
    }
  } else {
    n = wait_ms(fd_.get(), events, max_events, timeout_ns);
  }
  if (n < 0) {
    if (errno == EINTR) return 0;
    return fail_errno("epoll_wait");
  }
  return n;
}

}  // namespace weft::net
