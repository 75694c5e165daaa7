#pragma once
// WaitMode::epoll: one epoll set over the completion channels of many CQs and any other file
// descriptors (sockets, eventfds), so one thread serves them all with a timeout. A CQ reported
// ready has been re-armed; drain it with CompletionQueue::poll until empty, or its next event
// may not come (events fire on new completions only).
#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "base/fd.hpp"
#include "base/result.hpp"
#include "rdma/completion_queue.hpp"

namespace weft::rdma {

class CqPoller {
 public:
  struct Ready {
    enum class Kind { cq, fd } kind = Kind::cq;
    uint64_t tag = 0;     // what the caller passed to watch()
    uint32_t events = 0;  // epoll events, for fds
  };

  static Result<CqPoller> create();

  // Watches cq (made with a completion channel; the channel is made non-blocking and the CQ armed).
  // Several CQs may share one channel. The CQ must outlive the poller or be unwatched first.
  Status watch(CompletionQueue& cq, uint64_t tag);
  Status unwatch(CompletionQueue& cq);
  // Watches any fd for the given epoll events (EPOLLIN by default).
  Status watch_fd(int fd, uint64_t tag, uint32_t events = 0x001 /* EPOLLIN */);
  Status unwatch_fd(int fd);

  // Waits up to timeout; fills out with what is ready and returns how many (0 on timeout).
  // timeout < 0 waits without limit.
  Result<int> wait(std::span<Ready> out, std::chrono::milliseconds timeout);

  // The epoll fd itself: readable when something is ready, so an outer event loop can nest it.
  int fd() const { return ep_.get(); }

 private:
  explicit CqPoller(Fd ep) : ep_(std::move(ep)) {}
  struct CqEntry {
    ibv_cq* cq;
    uint64_t tag;
  };
  struct FdEntry {
    int fd;
    bool is_channel;
    uint64_t tag;
    CompletionChannel* channel;
    int users;  // CQs on this channel
  };
  Fd ep_;
  std::vector<CqEntry> cqs_;
  std::vector<FdEntry> fds_;
};

}  // namespace weft::rdma
