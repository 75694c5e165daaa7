#include "rdma/completion_waiter.hpp"

#include <array>

namespace weft::rdma {

Result<CompletionWaiter> CompletionWaiter::create(CompletionQueue& cq, WaitMode mode) {
  if (mode != WaitMode::busy && !cq.channel())
    return fail("{} wait mode needs a CQ made with a completion channel", to_string(mode));
  CompletionWaiter w(cq, mode);
  if (mode == WaitMode::epoll) {
    auto p = CqPoller::create();
    if (!p) return std::unexpected(p.error());
    w.poller_.emplace(std::move(*p));
    if (auto s = w.poller_->watch(cq, 0); !s) return std::unexpected(s.error());
  }
  return w;
}

Result<int> CompletionWaiter::wait(std::span<ibv_wc> out, std::chrono::milliseconds timeout) {
  fd_tag_.reset();
  if (mode_ != WaitMode::epoll) return cq_->wait(out, mode_, timeout);
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + timeout;
  std::array<CqPoller::Ready, 8> ready;
  for (;;) {
    // The poller re-armed the CQ before reporting it, so polling until empty here loses nothing.
    auto n = cq_->poll(out);
    if (!n || *n > 0) return n;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() <= 0) return 0;
    auto r = poller_->wait(ready, left);
    if (!r) return std::unexpected(r.error());
    for (int i = 0; i < *r; ++i)
      if (ready[static_cast<size_t>(i)].kind == CqPoller::Ready::Kind::fd)
        fd_tag_ = ready[static_cast<size_t>(i)].tag;
    if (fd_tag_) {
      // Completions first: a peer that sent its last message and closed is not an error.
      n = cq_->poll(out);
      if (!n || *n > 0) return n;
      return 0;
    }
  }
}

}  // namespace weft::rdma
