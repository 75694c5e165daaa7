// The responder's event loop: one coalesced wait per wake-up, the events dispatched to the UDP and
// TCP sides, then the timed work (stream follow-ups, idle connections, held follow-ups).
#include <algorithm>
#include <vector>

#include "base/clock.hpp"
#include "net/epoll.hpp"
#include "probe/ip/responder_impl.hpp"
#include "probe/ip/wake_coalescer.hpp"

namespace weft::probe {

void Responder::Impl::poll_udp(bool on) {
  if (on == udp_polled || !udp.valid()) return;
  udp_polled = on;
  if (on)
    ep.remove(udp.get());
  else
    (void)ep.add(udp.get(), EPOLLIN, tag(kUdp, 0));
}

Status Responder::Impl::loop() {
  std::vector<epoll_event> event_buf(kEvents);  // once per run(): 12 KB is too much for the stack
  epoll_event* events = event_buf.data();
  CoalescingWait waiter(cfg.coalesce.count(), cfg.max_coalesce.count());
  while (!stop_flag.load(std::memory_order_relaxed)) {
    // stop() is noticed within 100 ms; a polled UDP socket is read at the end of each period.
    const int64_t deadline = std::min({mono_ns() + 100'000'000, next_stream_followup, next_held_due});
    auto n = waiter.wait(ep, events, kEvents,
                         udp_polled ? std::min(deadline, waiter.next_wake_ns()) : deadline, udp_polled);
    if (!n) return std::unexpected(n.error());
    for (int i = 0; i < *n; ++i) {
      const uint64_t d = events[i].data.u64;
      const auto kind = static_cast<Kind>(net::event_kind(d));
      const uint64_t v = net::event_value(d);
      switch (kind) {
        case kWake:
          wake.drain();
          break;
        case kUdp:
          if (events[i].events & EPOLLIN)
            udp_readable();
          else
            drain_errqueue();
          break;
        case kListen:
          accept_all();
          break;
        case kConn:
          conn_event(static_cast<int>(v), events[i].events);
          break;
      }
    }
    const int64_t now = mono_ns();
    stream_followups(now);
    if (now >= next_reap_ns && !conns.empty()) {
      next_reap_ns = now + 1'000'000'000;
      reap_idle(now - cfg.tcp_idle_timeout.count(), 0);
    }
    inc(wakeups);
    if (udp_polled) {
      inc(streaming_wakeups);
      udp_readable();  // drains the error queue too
    }
    if (now >= next_held_due || held.full()) release_held(mono_ns());
    waiter.handled(2 * answered.load(std::memory_order_relaxed));  // each answer: a datagram in, one out
    poll_udp(waiter.streaming());
  }
  return {};
}

Status Responder::run() { return impl_->loop(); }

void Responder::stop() {
  impl_->stop_flag.store(true);
  impl_->wake.signal();
}

}  // namespace weft::probe
