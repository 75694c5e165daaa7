#pragma once
// epoll with nanosecond timeouts (epoll_pwait2), and an eventfd to wake a waiting loop.
#include <sys/epoll.h>

#include <cstdint>

#include "base/result.hpp"
#include "net/fd.hpp"

namespace weft::net {

class Epoll {
 public:
  static Result<Epoll> create();
  Status add(int fd, uint32_t events, uint64_t data);
  Status modify(int fd, uint32_t events, uint64_t data);
  void remove(int fd);
  // Waits at most timeout_ns (< 0: forever). Returns the number of events (0 on timeout or EINTR).
  Result<int> wait(epoll_event* events, int max_events, int64_t timeout_ns);

 private:
  Fd fd_;
};

class EventFd {
 public:
  static Result<EventFd> create();
  int fd() const { return fd_.get(); }
  void signal();  // thread-safe, async-signal-safe
  void drain();

 private:
  Fd fd_;
};

}  // namespace weft::net
