// The IP prober's event loop: wake up, send what is due (sendmmsg batches), read what came,
// resolve timed-out probes and answered ones whose follow-up did not come, close windows, sleep.
#include <algorithm>
#include <vector>

#include "probe/ip/prober_impl.hpp"
#include "probe/ip/wake_coalescer.hpp"

namespace weft::probe {

Status Prober::Impl::loop() {
  std::vector<epoll_event> event_buf(kEvents);  // once per run()
  epoll_event* events = event_buf.data();
  offset_rt = realtime_ns() - mono_ns();
  next_flush_mono = 0;
  // Kept-open TCP reads each answer as it comes: a stream has one receive stamp per read, so an
  // answer read together with a later frame loses its own (frame_reader.hpp). It never coalesces.
  const bool coalescing = !(cfg.protocol == Protocol::tcp && cfg.tcp_keep_open);
  CoalescingWait waiter(coalescing ? cfg.coalesce.count() : 0, coalescing ? cfg.max_coalesce.count() : 0);
  while (!stop_flag.load(std::memory_order_relaxed)) {
    const int64_t coalesce = waiter.period_ns();
    // Sends due within one coalescing period go out together (slack 0: every send on time).
    slack_ns = cfg.batch_slack.count() == 0 ? 0 : std::max<int64_t>(cfg.batch_slack.count(), coalesce);
    int64_t now = mono_ns();
    if (has_pending.load(std::memory_order_relaxed)) apply_targets(now);
    send_due(now);
    now = mono_ns();
    trace_step(now);
    grace_sweep(now);
    expire(now);
    flush_windows(now);
    // The timers (next send, expiry, end of a follow-up's grace) wait for the end of the current
    // period: a send may go out up to slack_ns early anyway, and an expiry or grace resolved up
    // to one period late resolves the same way (it is judged by its own deadline and stamps,
    // not by when the loop looks). Waking for each one as it came woke a streaming prober
    // ~280-350 times a second at 1K-10K probes/s where the floor wakes 200 (issue 17): the next
    // send lies just past the batch sent, and it was woken for half a period before it.
    int64_t timers = std::min({expire_next(), grace_next(), trace_next()});
    if (!heap.empty()) timers = std::min(timers, heap.front().t - slack_ns / 2);
    int64_t next = std::min<int64_t>(now + 100'000'000, next_flush_mono);  // stop() is noticed within 100 ms
    next = std::min(next, std::max(timers, waiter.next_wake_ns()));
    if (udp_polled) next = std::min(next, waiter.next_wake_ns());
    auto n = waiter.wait(ep, events, kEvents, next, udp_polled);
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
          udp_readable(static_cast<int>(v), events[i].events);
          break;
        case kTcpConnect:
          tcp_connected(v);
          break;
        case kTcpConn:
          keep_open_event(static_cast<uint32_t>(v), events[i].events);
          break;
      }
    }
    Counters::inc(ctr.wakeups);
    if (udp_polled) {
      Counters::inc(ctr.streaming_wakeups);
      for (size_t f = 0; f < udp.size(); ++f)
        // The error queue only when stamps may be waiting (the send path drained it): on a
        // stream that saves one empty read per wake-up, a system call the floor does not make.
        if (udp[f].polled)
          udp_readable(static_cast<int>(f), udp[f].unstamped ? EPOLLIN | EPOLLERR : uint32_t{EPOLLIN});
    }
    waiter.handled(ctr.sent.load(std::memory_order_relaxed) + ctr.received.load(std::memory_order_relaxed));
    poll_udp(waiter.streaming());
  }
  return {};
}

void Prober::Impl::send_due(int64_t now) {
  const int64_t limit = now + slack_ns;
  while (!heap.empty() && heap.front().t <= limit) {
    const HeapEntry e = heap.front();
    if (e.index >= targets.size() || !targets[e.index]) {
      heap_pop_top();
      continue;
    }
    TargetState& t = *targets[e.index];
    if (t.gen != e.gen || t.retired) {
      heap_pop_top();
      continue;
    }
    if (cfg.protocol == Protocol::udp)
      udp_queue(e.index, t);
    else if (cfg.tcp_keep_open)
      keep_open_send(e.index, t, now);
    else
      tcp_start(e.index, t);
    if (cfg.count != 0 && ++t.sends >= cfg.count) {  // done: not rescheduled
      heap_pop_top();
      continue;
    }
    // Next nominal slot plus up to +/-5% jitter. After a stall longer than an interval (and
    // 20 ms), the missed slots are skipped rather than sent in a burst.
    ++t.k;
    int64_t nominal = t.phase_mono + static_cast<int64_t>(t.k) * interval_ns;
    if (nominal < now - std::max<int64_t>(interval_ns, 20'000'000)) {
      t.k = static_cast<uint64_t>((now - t.phase_mono) / interval_ns) + 1;
      nominal = t.phase_mono + static_cast<int64_t>(t.k) * interval_ns;
    }
    heap.front().t = nominal + rng.symmetric(interval_ns / 20);
    heap_sift_down_top();
  }
  udp_flush_batch();
}

void Prober::Impl::expire(int64_t now) {
  while (expire_cursor < next_seq) {
    Slot& s = table.at(expire_cursor);
    if (s.seq == expire_cursor && (s.state == SlotState::pending || s.state == SlotState::answered)) {
      if (deadline(s) > now) break;
      if (s.state == SlotState::pending)
        lose(s);
      else
        finalize(s);
    }
    ++expire_cursor;
  }
}

int64_t Prober::Impl::expire_next() {
  while (expire_cursor < next_seq) {
    Slot& s = table.at(expire_cursor);
    if (s.seq == expire_cursor && (s.state == SlotState::pending || s.state == SlotState::answered))
      return deadline(s);
    ++expire_cursor;
  }
  return INT64_MAX;
}

void Prober::Impl::grace_sweep(int64_t now) {
  const int64_t grace = grace_ns;
  while (grace_count > 0) {
    Slot* s = table.find(grace_ring[grace_head]);
    if (s && s->state == SlotState::answered) {
      if (s->timing.rx_user_mono + grace > now) break;
      finalize(*s);
    }
    grace_head = (grace_head + 1) % grace_ring.size();
    --grace_count;
  }
}

int64_t Prober::Impl::grace_next() {
  while (grace_count > 0) {
    Slot* s = table.find(grace_ring[grace_head]);
    if (s && s->state == SlotState::answered) return s->timing.rx_user_mono + grace_ns;
    grace_head = (grace_head + 1) % grace_ring.size();
    --grace_count;
  }
  return INT64_MAX;
}

// While a stream flows, the UDP sockets leave the epoll set and are read on every wake-up
// instead: every datagram and every transmit stamp queued on a socket in an epoll set calls
// epoll's callback (a lock and a check), several per probe, and a streaming loop wakes on its
// own timer anyway. Back in the set as soon as the load is light, so answers are read at once.
// A socket without targets stays in the set (nothing of ours arrives there; it costs no reads).
void Prober::Impl::poll_udp(bool streaming) {
  udp_polled = false;
  for (size_t f = 0; f < udp.size(); ++f) {
    UdpSock& u = udp[f];
    if (!u.fd.valid()) continue;
    const bool want = streaming && u.targets > 0;
    if (want != u.polled) {
      if (want)
        ep.remove(u.fd.get());
      else
        (void)ep.add(u.fd.get(), EPOLLIN, tag(kUdp, static_cast<uint64_t>(f)));
      u.polled = want;
    }
    udp_polled |= want;
  }
}

}  // namespace weft::probe
