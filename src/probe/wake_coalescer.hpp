#pragma once
// How long an event loop sleeps between looks at its sockets, adapted to its load.
//
// A wake-up costs far more than a datagram on a virtual machine (timer, context switch, epoll),
// so a busy prober or responder should handle many packets per wake-up; but sleeping too long
// lets a high rate overflow the socket buffers and makes the responder shed follow-ups. Kernel
// timestamps keep the wait out of every network RTT (it falls between the responder's receive and
// send stamps, or before the prober reads an already-stamped answer); it does show in the
// responder delay and so in the total RTT. Hence the period only grows where batching pays:
//  - a wake-up that handles fewer than kBusy datagrams: back towards min (light load: answer soon);
//  - kBusy..kFew: a little longer (a real stream: batch it);
//  - more than kMany: half as long (the buffers must not fill).
// With the defaults (1-5 ms), 10,000 probes/s (20,000 datagrams in and out) settle at 5 ms, 100,000/s
// at about 2.5 ms, and a prober or responder handling up to ~2,000 datagrams/s stays at 1 ms. An idle
// loop still reacts to the first packet at once (the sleep only follows a wake-up).
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
  static constexpr size_t kBusy = 8;    // fewer: light load, shorten
  static constexpr size_t kFew = 128;   // kBusy..kFew: lengthen
  static constexpr size_t kMany = 512;  // more: halve

  WakeCoalescer(int64_t min_ns, int64_t max_ns)
      : min_(std::max<int64_t>(min_ns, 0)), max_(std::max(min_, max_ns)), period_(min_) {}

  int64_t period_ns() const { return period_; }
  // Above the shortest period: a stream is flowing and every wake-up will find packets.
  bool streaming() const { return period_ > min_; }

  // `packets`: datagrams the last wake-up read and sent.
  void observe(size_t packets) {
    if (packets > kMany || packets < kBusy)
      period_ = std::max(min_, period_ / 2);
    else if (packets < kFew)
      period_ = std::min(max_, period_ + std::max<int64_t>(period_ / 4, 100'000));
  }

 private:
  int64_t min_, max_, period_;
};

// The wait at the top of a coalescing event loop (prober, responder): sleep out the rest of the
// current period since the last wake-up (never past `deadline_mono`), then wait for events until
// `deadline_mono`. handled() after the events were dealt with adapts the period.
class CoalescingWait {
 public:
  CoalescingWait(int64_t min_ns, int64_t max_ns) : coalescer_(min_ns, max_ns) {}

  int64_t period_ns() const { return coalescer_.period_ns(); }
  bool streaming() const { return coalescer_.streaming(); }
  // When the current period since the last wake-up ends.
  int64_t next_wake_ns() const { return last_wake_ + coalescer_.period_ns(); }

  Result<int> wait(net::Epoll& ep, epoll_event* events, int max_events, int64_t deadline_mono) {
    const int64_t until = std::min(last_wake_ + coalescer_.period_ns(), deadline_mono);
    if (until > mono_ns()) sleep_until_mono(until);
    auto n = ep.wait(events, max_events, std::max<int64_t>(0, deadline_mono - mono_ns()));
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
};

}  // namespace weft::probe
