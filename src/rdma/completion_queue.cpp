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
  return CompletionQueue(own_cq(cq, dev, ch), nullptr, ch);
}

Result<CompletionQueue> CompletionQueue::create(const Device& dev, int depth, WaitMode mode) {
  if (mode == WaitMode::busy) return create(dev, depth);
  auto ch = CompletionChannel::create(dev);
  if (!ch) return std::unexpected(ch.error());
  return create(dev, depth, std::move(*ch));
}

Result<CompletionQueue> CompletionQueue::create_timestamped(const Device& dev, int depth,
                                                            std::shared_ptr<CompletionChannel> ch) {
  // Ask the device first: drivers without a clock may still accept the flag and return zeros.
  if (auto clk = dev.clock(); !clk) return std::unexpected(clk.error());
  ibv_cq_init_attr_ex attr{};
  attr.cqe = static_cast<uint32_t>(depth);
  attr.channel = ch ? ch->raw() : nullptr;
  attr.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
                  IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
  errno = 0;
  ibv_cq_ex* ex = ibv_create_cq_ex(dev.raw(), &attr);
  if (!ex) {
    int err = errno ? errno : EOPNOTSUPP;
    if (err == EOPNOTSUPP || err == ENOSYS)
      return std::unexpected(
          Error{fmt::format("completion timestamps not supported by {}: ibv_create_cq_ex: {}", dev.name(),
                            std::strerror(err)),
                err});
    return verb_error(fmt::format("ibv_create_cq_ex (completion timestamps) on {}", dev.name()), err);
  }
  return CompletionQueue(own_cq(ibv_cq_ex_to_cq(ex), dev, ch), ex, ch);
}

Result<int> CompletionQueue::poll(std::span<ibv_wc> out, std::span<uint64_t> timestamps) {
  if (ex_) return poll_ex(out, timestamps);
  int n = ibv_poll_cq(cq_.get(), static_cast<int>(out.size()), out.data());
  if (n < 0) return verb_error("ibv_poll_cq", -n > 0 ? -n : EIO);
  return n;
}

Result<int> CompletionQueue::poll_ex(std::span<ibv_wc> out, std::span<uint64_t> timestamps) {
  if (out.empty()) return 0;
  ibv_poll_cq_attr attr{};
  int rc = ibv_start_poll(ex_, &attr);
  if (rc == ENOENT) return 0;
  if (rc != 0) return verb_error("ibv_start_poll", rc);
  int n = 0;
  for (;;) {
    ibv_wc& wc = out[static_cast<size_t>(n)];
    wc = ibv_wc{};
    wc.wr_id = ex_->wr_id;
    wc.status = ex_->status;
    wc.opcode = ibv_wc_read_opcode(ex_);
    wc.vendor_err = ibv_wc_read_vendor_err(ex_);
    wc.byte_len = ibv_wc_read_byte_len(ex_);
    wc.wc_flags = ibv_wc_read_wc_flags(ex_);
    if (wc.wc_flags & IBV_WC_WITH_IMM) wc.imm_data = ibv_wc_read_imm_data(ex_);
    wc.qp_num = ibv_wc_read_qp_num(ex_);
    wc.src_qp = ibv_wc_read_src_qp(ex_);
    if (!timestamps.empty()) timestamps[static_cast<size_t>(n)] = ibv_wc_read_completion_ts(ex_);
    ++n;
    if (static_cast<size_t>(n) == out.size()) break;
    rc = ibv_next_poll(ex_);
    if (rc == ENOENT) break;
    if (rc != 0) {
      ibv_end_poll(ex_);
      return verb_error("ibv_next_poll", rc);
    }
  }
  ibv_end_poll(ex_);
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
