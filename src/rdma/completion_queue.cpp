#include "rdma/completion_queue.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "base/log.hpp"
#include "rdma/error.hpp"

namespace weft::rdma {

Result<WaitMode> parse_wait_mode(std::string_view s) {
  if (s == "busy") return WaitMode::busy;
  if (s == "channel") return WaitMode::channel;
  if (s == "epoll") return WaitMode::epoll;
  return fail("unknown wait mode '{}' (busy|channel|epoll)", s);
}

std::string_view to_string(WaitMode m) {
  switch (m) {
    case WaitMode::busy:
      return "busy";
    case WaitMode::channel:
      return "channel";
    case WaitMode::epoll:
      return "epoll";
  }
  return "?";
}

namespace {
// The deleter keeps the channel and the device alive: a QP may hold the CQ longer than its wrapper.
std::shared_ptr<ibv_cq> own_cq(ibv_cq* cq, const Device& dev, std::shared_ptr<CompletionChannel> ch) {
  auto ctx = dev.shared();
  return std::shared_ptr<ibv_cq>(cq, [ctx, ch](ibv_cq* c) {
    if (int rc = ibv_destroy_cq(c)) log().warn("ibv_destroy_cq: errno {} (a QP still uses it?)", rc);
  });
}
}  // namespace

Result<CompletionQueue> CompletionQueue::create(const Device& dev, int depth,
                                                std::shared_ptr<CompletionChannel> ch) {
  errno = 0;
  ibv_cq* cq = ibv_create_cq(dev.raw(), depth, nullptr, ch ? ch->raw() : nullptr, 0);
  if (!cq)
    return verb_error(fmt::format("ibv_create_cq depth {} on {}", depth, dev.name()), errno ? errno : ENOMEM);
  return CompletionQueue(own_cq(cq, dev, ch), ch);
}

Result<CompletionQueue> CompletionQueue::create(const Device& dev, int depth, WaitMode mode) {
  if (mode == WaitMode::busy) return create(dev, depth);
  auto ch = CompletionChannel::create(dev);
  if (!ch) return std::unexpected(ch.error());
  return create(dev, depth, std::move(*ch));
}

Result<int> CompletionQueue::poll(std::span<ibv_wc> out) {
  int n = ibv_poll_cq(cq_.get(), static_cast<int>(out.size()), out.data());
  if (n < 0) return verb_error("ibv_poll_cq", -n > 0 ? -n : EIO);
  return n;
}

Status CompletionQueue::arm(bool solicited_only) {
  if (!channel_) return fail("ibv_req_notify_cq: this CQ has no completion channel");
  if (int rc = ibv_req_notify_cq(cq_.get(), solicited_only ? 1 : 0))
    return verb_error("ibv_req_notify_cq", rc);
  return {};
}

Result<int> CompletionQueue::wait(std::span<ibv_wc> out, WaitMode mode, std::chrono::milliseconds timeout) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + timeout;
  if (mode == WaitMode::busy) {
    for (unsigned spins = 0;; ++spins) {
      auto n = poll(out);
      if (!n || *n > 0) return n;
      // Reading the clock costs more than a poll; look at it every 1024 empty polls.
      if ((spins & 1023) == 1023 && clock::now() >= deadline) return 0;
    }
  }
  if (mode == WaitMode::epoll) return fail("CompletionQueue::wait: epoll mode waits through a CqPoller");
  if (!channel_) return fail("CompletionQueue::wait: channel mode needs a CQ made with a completion channel");
  for (;;) {
    auto n = poll(out);
    if (!n || *n > 0) return n;
    if (auto a = arm(); !a) return std::unexpected(a.error());
    // A completion that arrived before the arm raised no event: look once more before blocking.
    n = poll(out);
    if (!n || *n > 0) return n;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() <= 0) return 0;
    auto ev = channel_->get_event(left);
    if (!ev) return std::unexpected(ev.error());
    if (*ev == nullptr) return 0;
  }
}

}  // namespace weft::rdma
