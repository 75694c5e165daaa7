#pragma once
// A completion queue (ibv_create_cq), what message connections and the benchmarks poll. The one
// CQ with NIC completion timestamps and a poll stamp on every completion is ExtendedCq
// (extended_cq.hpp), the probe engine's. One CQ may serve one QP or many (pass the same CQ to
// several QueuePairs). Three ways to wait for completions:
//   busy     spin on ibv_poll_cq: lowest latency, one core per waiting thread;
//   channel  arm the CQ and block in ibv_get_cq_event on its completion channel;
//   epoll    the channel's fd in a CqPoller (cq_poller.hpp) with other CQs and sockets.
#include <infiniband/verbs.h>

#include <chrono>
#include <memory>
#include <span>
#include <string_view>

#include "base/result.hpp"
#include "rdma/completion_channel.hpp"
#include "rdma/device.hpp"

namespace weft::rdma {

enum class WaitMode { busy, channel, epoll };
Result<WaitMode> parse_wait_mode(std::string_view s);
std::string_view to_string(WaitMode m);

class CompletionQueue {
 public:
  // channel: needed for the channel and epoll modes (may be shared with other CQs), else null.
  static Result<CompletionQueue> create(const Device& dev, int depth,
                                        std::shared_ptr<CompletionChannel> channel = nullptr);
  // A CQ ready to be waited on in `mode`: with a completion channel of its own unless busy.
  static Result<CompletionQueue> create(const Device& dev, int depth, WaitMode mode);

  ibv_cq* raw() const { return cq_.get(); }
  const std::shared_ptr<ibv_cq>& shared() const { return cq_; }
  CompletionChannel* channel() const { return channel_.get(); }
  int depth() const { return cq_->cqe; }

  // Non-blocking: up to out.size() completions, 0 if none.
  Result<int> poll(std::span<ibv_wc> out);
  // Requests an event on the channel for the next completion (ibv_req_notify_cq).
  Status arm(bool solicited_only = false);
  // Waits up to timeout for at least one completion (busy or channel; epoll is CqPoller's job)
  // and returns how many it took, 0 on timeout.
  Result<int> wait(std::span<ibv_wc> out, WaitMode mode, std::chrono::milliseconds timeout);

 private:
  CompletionQueue(std::shared_ptr<ibv_cq> cq, std::shared_ptr<CompletionChannel> ch)
      : channel_(std::move(ch)), cq_(std::move(cq)) {}

  std::shared_ptr<CompletionChannel> channel_;  // declared first: destroyed after the CQ
  std::shared_ptr<ibv_cq> cq_;
};

}  // namespace weft::rdma
