#pragma once
// An owned eventfd: a descriptor a loop waits on (epoll, poll) that another thread, a signal
// handler or the loop itself makes readable. Non-blocking and close-on-exec.
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

#include "base/fd.hpp"
#include "base/result.hpp"

namespace weft {

class EventFd {
 public:
  // `initial` is the counter's first value: 1 makes it readable at once.
  static Result<EventFd> create(uint64_t initial = 0) {
    EventFd e;
    e.fd_.reset(::eventfd(static_cast<unsigned>(initial), EFD_NONBLOCK | EFD_CLOEXEC));
    if (!e.fd_.valid()) return fail_errno("eventfd");
    return e;
  }
  int fd() const { return fd_.get(); }
  bool valid() const { return fd_.valid(); }
  // Adds one: readable from now until drain(). Thread-safe and async-signal-safe (one write).
  // False when the write failed (the counter is at its maximum, or there is no descriptor).
  bool signal() {
    const uint64_t one = 1;
    return ::write(fd_.get(), &one, sizeof one) == sizeof one;
  }
  // Reads the counter back to zero (not readable any more): one read() does it, as the counter is
  // not a semaphore. False when it was zero already.
  bool drain() {
    uint64_t v;
    return ::read(fd_.get(), &v, sizeof v) == sizeof v;
  }

 private:
  Fd fd_;
};

}  // namespace weft
