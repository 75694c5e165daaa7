#pragma once
// A completion channel (ibv_comp_channel): the file descriptor through which armed CQs signal
// new completions. Blocking by default (WaitMode::channel); set_nonblocking() for epoll.
#include <infiniband/verbs.h>

#include <chrono>
#include <memory>

#include "base/result.hpp"
#include "rdma/device.hpp"

namespace weft::rdma {

class CompletionChannel {
 public:
  static Result<std::shared_ptr<CompletionChannel>> create(const Device& dev);
  ~CompletionChannel();
  CompletionChannel(const CompletionChannel&) = delete;
  CompletionChannel& operator=(const CompletionChannel&) = delete;

  int fd() const { return ch_->fd; }
  ibv_comp_channel* raw() const { return ch_; }
  Status set_nonblocking(bool on = true);

  // Takes one event (ibv_get_cq_event) and acknowledges it. Returns the CQ that fired, nullptr
  // when the timeout passed (or, non-blocking, when none was pending). timeout < 0: no limit.
  Result<ibv_cq*> get_event(std::chrono::milliseconds timeout);

 private:
  CompletionChannel(std::shared_ptr<ibv_context> ctx, ibv_comp_channel* ch) : ctx_(std::move(ctx)), ch_(ch) {}
  std::shared_ptr<ibv_context> ctx_;
  ibv_comp_channel* ch_;
};

}  // namespace weft::rdma
