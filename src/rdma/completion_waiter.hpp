#pragma once
// Waiting on one CQ in any WaitMode behind one call, for code that lets the user pick the mode
// (the pingpong and mesh examples). In epoll mode it owns a CqPoller; add sockets to poller()
// and wait() returns 0 with fd_ready() set when one of them fires before a completion comes.
#include <chrono>
#include <optional>
#include <span>

#include "base/result.hpp"
#include "rdma/completion_queue.hpp"
#include "rdma/cq_poller.hpp"

namespace weft::rdma {

class CompletionWaiter {
 public:
  // cq must have a completion channel for channel and epoll modes, and outlive the waiter.
  static Result<CompletionWaiter> create(CompletionQueue& cq, WaitMode mode);

  // Up to out.size() completions, at least one unless the timeout passed (0) or, in epoll mode,
  // a watched fd became ready (0 and fd_ready()).
  Result<int> wait(std::span<ibv_wc> out, std::chrono::milliseconds timeout);

  WaitMode mode() const { return mode_; }
  CqPoller* poller() { return poller_ ? &*poller_ : nullptr; }
  // The tag of the fd that ended the last wait, if one did.
  std::optional<uint64_t> fd_ready() const { return fd_tag_; }

 private:
  CompletionWaiter(CompletionQueue& cq, WaitMode mode) : cq_(&cq), mode_(mode) {}
  CompletionQueue* cq_;
  WaitMode mode_;
  std::optional<CqPoller> poller_;
  std::optional<uint64_t> fd_tag_;
};

}  // namespace weft::rdma
