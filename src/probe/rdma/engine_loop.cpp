// The RDMA probe engine's loop: apply new targets, drain, sweep timeouts, close windows, send what
// is due, then sleep on the CQ's channel (or spin, with busy polling) until the next due time.
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "base/clock.hpp"
#include "probe/rdma/engine_impl.hpp"

namespace weft::probe {

void RdmaEngine::Impl::close_windows(int64_t now_unix) {
  for (auto& t : targets)
    if (!t->retired) t->windows.close_until(now_unix, cfg.window.count(), emitter(t.get()));
}

Status RdmaEngine::Impl::sleep_until(int64_t until_mono) {
  // Send completions are due within microseconds: wait for them awake, so that the follow-ups
  // they trigger are not late by a wake-up.
  const int64_t spin = cfg.send_spin.count();
  for (const int64_t spin_end = std::min(until_mono, mono_ns() + spin);
       outstanding() > 0 && mono_ns() < spin_end;) {
    auto n = drain();
    if (!n) return std::unexpected(n.error());
  }
  if (auto st = cq.arm(); !st) return st;
  // A completion that came before the arm raised no event: look once more.
  auto n = drain();
  if (!n) return std::unexpected(n.error());
  if (*n > 0) return {};
  const int64_t left = until_mono - mono_ns();
  if (left <= 0) return {};
  pollfd fds[2] = {{channel->fd(), POLLIN, 0}, {wake.fd(), POLLIN, 0}};
  timespec ts = ns_timespec(left);
  if (ppoll(fds, 2, &ts, nullptr) < 0 && errno != EINTR) return fail_errno("ppoll");
  if (fds[0].revents & POLLIN) {
    // Take (and acknowledge) every pending event: the channel is non-blocking, nullptr = none left.
    for (;;) {
      auto ev = channel->get_event(std::chrono::milliseconds(-1));
      if (!ev) return std::unexpected(ev.error());
      if (!*ev) break;
    }
  }
  if (fds[1].revents & POLLIN) wake.drain();
  return {};
}

Status RdmaEngine::Impl::busy_spin(int64_t next) {
  for (int i = 0; i < kBusyPolls && !stopping.load(std::memory_order_relaxed); ++i) {
    auto n = drain();
    if (!n) return std::unexpected(n.error());
    if (*n > 0) return {};
    // Every 32 empty polls, look whether a PING is due.
    if ((i & 31) == 31 && mono_ns() >= next) return {};
  }
  return {};
}

Status RdmaEngine::Impl::run() {
  const int64_t grace = cfg.followup_grace.count();
  while (!stopping.load(std::memory_order_relaxed)) {
    if (auto st = apply_targets(); !st) return st;
    auto n = drain();
    if (!n) return std::unexpected(n.error());
    const int64_t now = mono_ns();
    const int64_t now_unix = realtime_ns();
    in_flight->sweep(now, grace);
    close_windows(now_unix);
    const int64_t next = send_due(now, now_unix);
    if (cfg.busy_poll) {
      if (auto st = busy_spin(next); !st) return st;
      continue;
    }
    if (auto st = sleep_until(std::min(next, now + kMaxSleepNs)); !st) return st;
  }
  // Finish what the targets have: the last, partial windows.
  for (auto& t : targets)
    if (!t->retired) t->windows.close_all(emitter(t.get()));
  return {};
}

Status RdmaEngine::run(std::function<void(WindowStats&&)> on_window) {
  impl_->on_window = std::move(on_window);
  // stopping is not cleared here: a stop() that comes before run() starts must not be lost (the
  // agent stops engines from another thread at any moment). An engine runs once.
  return impl_->run();
}

void RdmaEngine::stop() {
  impl_->stopping.store(true);
  impl_->wake.signal();
}

}  // namespace weft::probe
