#pragma once
// epoll with nanosecond timeouts (epoll_pwait2). The eventfd that wakes a waiting loop is
// base/event_fd.hpp.
#include <sys/epoll.h>

#include <cstdint>

#include "base/event_fd.hpp"
#include "base/fd.hpp"
#include "base/result.hpp"

namespace weft::net {

// epoll_event.data.u64 as (kind, value): an event loop's small enum in the top byte, an index or
// file descriptor below it.
inline constexpr uint64_t kEventKindShift = 56;
constexpr uint64_t event_tag(uint8_t kind, uint64_t value) {
  return (uint64_t{kind} << kEventKindShift) | value;
}
constexpr uint8_t event_kind(uint64_t tag) { return static_cast<uint8_t>(tag >> kEventKindShift); }
constexpr uint64_t event_value(uint64_t tag) { return tag & ((uint64_t{1} << kEventKindShift) - 1); }

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

}  // namespace weft::net
