#pragma once
// How long an event loop sleeps between looks at its sockets, adapted to its load.
//
// A wake-up costs far more than a datagram on a virtual machine (timer, context switch, epoll),
// so a prober or responder should handle many packets per wake-up; but sleeping too long lets a
// high rate overflow the socket buffers and makes the responder shed follow-ups. Kernel
// timestamps keep the wait out of every network RTT (it falls between the responder's receive and
// send stamps, or before the prober reads an already-stamped answer); it does show in the
// responder delay and so in the total RTT: a busy responder holds a probe up to the longest
// period (5 ms by default) before it answers, an idle one answers at once.
// Hence the period sits at the longest unless the load is heavy:
//  - a wake-up that handles more than kMany datagrams: half as long (the buffers must not fill),
//    never below the shortest;
//  - otherwise back up towards the longest, whatever the load. Light load stays there too: at
//    1,000 probes/s a 1 ms period meant ~1,000 wake-ups a second on each side for one or two
//    datagrams each, twice the CPU of the kernel floor with 5 ms wake-ups (issue 17).
// With the defaults (1-5 ms), up to ~50,000 probes/s stay at 5 ms and 100,000/s settle at about
// 2.5 ms. An idle loop still reacts to the first packet at once (the sleep only follows a
// wake-up), so a probe every 5 ms or more is answered without any hold.
// streaming(): a wake-up handled at least kBusy datagrams, and since then none of kQuietWakeups
// wake-ups in a row handled fewer than kQuiet; the loop then reads its UDP sockets on a timer every
// period instead of through epoll. The gap between kBusy and kQuiet is hysteresis: at 1,000
// probes/s over 100 targets each side sees about 8-12 datagrams per 5 ms wake-up, and a single
// threshold at kBusy flipped the sockets in and out of the epoll set (two epoll_ctl each time)
// about 650 times a second (issue 17).
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "base/clock.hpp"
#include "base/result.hpp"
#include "net/epoll.hpp"

namespace weft::probe {

class WakeCoalescer {
 public:
  // Datagrams read and sent per wake-up.
  static constexpr size_t kBusy = 8;   // at least: a stream is flowing (see streaming())
  static constexpr size_t kQuiet = 2;  // fewer, kQuietWakeups times in a row: it has stopped
  static constexpr int kQuietWakeups = 3;
  static constexpr size_t kMany = 512;  // more: halve

  WakeCoalescer(int64_t min_ns, int64_t max_ns)
      : min_(std::max<int64_t>(min_ns, 0)), max_(std::max(min_, max_ns)), period_(max_) {}

  int64_t period_ns() const { return period_; }
  // A stream is flowing: the next wake-up will find packets too.
  bool streaming() const { return streaming_; }

  // `packets`: datagrams the last wake-up read and sent.
  void observe(size_t packets) {
    if (packets >= kBusy) {
      streaming_ = true;
      quiet_ = 0;
    } else if (packets < kQuiet && streaming_ && ++quiet_ >= kQuietWakeups) {
      streaming_ = false;
      quiet_ = 0;
    } else if (packets >= kQuiet) {
      quiet_ = 0;  // only consecutive quiet wake-ups end a stream
    }
    if (packets > kMany)
      period_ = std::max(min_, period_ / 2);
    else
      period_ = std::min(max_, period_ + std::max<int64_t>(period_ / 4, 100'000));
  }

 private:
  int64_t min_, max_, period_;
  bool streaming_ = false;
  int quiet_ = 0;  // consecutive wake-ups with fewer than kQuiet datagrams while streaming
};

// The wait at the top of a coalescing event loop (prober, responder): sleep out the rest of the
// current period since the last wake-up (never past `deadline_mono`), then wait for events until
// `deadline_mono`. handled() after the events were dealt with adapts the period.
//
// One wait per wake-up where it can (issue 17): a streaming loop has taken its busy sockets out of
// the epoll set and passes a deadline no later than the period's end, so the sleep ran to the
// deadline and the epoll call after it only collected what the rest of the set (wake-up eventfd,
// TCP) had: two system calls per wake-up. With `set_quiet` (the busy sockets are out) the wait is
// epoll's own timeout instead. Anything left in the set may then end the period early; after such
// an early wake-up the loop sleeps again for the next kSleepAfterEarly wake-ups, so a busy TCP
// side beside a UDP stream cannot make the loop wake once per connection.
class CoalescingWait {
 public:
  static constexpr int kSleepAfterEarly = 8;

  CoalescingWait(int64_t min_ns, int64_t max_ns) : coalescer_(min_ns, max_ns) {}

  int64_t period_ns() const { return coalescer_.period_ns(); }
  bool streaming() const { return coalescer_.streaming(); }
  // When the current period since the last wake-up ends.
  int64_t next_wake_ns() const { return last_wake_ + coalescer_.period_ns(); }
  // Waits done as one epoll call with the period's timeout (for tests and counters).
  uint64_t single_waits() const { return single_waits_; }

  Result<int> wait(net::Epoll& ep, epoll_event* events, int max_events, int64_t deadline_mono,
                   bool set_quiet = false) {
    const int64_t until = std::min(last_wake_ + coalescer_.period_ns(), deadline_mono);
    Result<int> n = 0;
    if (set_quiet && until == deadline_mono && sleep_left_ == 0) {
      ++single_waits_;
      n = ep.wait(events, max_events, std::max<int64_t>(0, deadline_mono - mono_ns()));
      if (n && *n > 0) sleep_left_ = kSleepAfterEarly;  // the rest of the set woke us
    } else {
      if (sleep_left_ > 0) --sleep_left_;
      if (until > mono_ns()) sleep_until_mono(until);
      n = ep.wait(events, max_events, std::max<int64_t>(0, deadline_mono - mono_ns()));
    }
    last_wake_ = mono_ns();
    return n;
  }

  // `datagrams_total`: a running count of datagrams read and sent; the growth since the last call
  // is what this wake-up handled.
  void handled(uint64_t datagrams_total) {
    coalescer_.observe(static_cast<size_t>(datagrams_total - before_));
    before_ = datagrams_total;
  }

 private:
  WakeCoalescer coalescer_;
  int64_t last_wake_ = 0;
  uint64_t before_ = 0;
  uint64_t single_waits_ = 0;
  int sleep_left_ = 0;  // wake-ups that still sleep after an early one
};

}  // namespace weft::probe
