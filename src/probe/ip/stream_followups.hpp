#pragma once
// The responder's echoes on one kept-open TCP connection that wait for their follow-up frame (the
// reply's kernel send time, two-step as on UDP; see responder.cpp), in a fixed ring: no allocation
// per probe, and a connection can hold no more than kCap (further replies are sent final, without
// "follow-up coming").
//
// Why a follow-up is held back (kHoldNs) after its reply: on a stream the prober gets one receive
// stamp per read, that of the last bytes read (net/frame_reader.hpp). A follow-up sent as soon as
// the reply's stamp is known (microseconds later) would usually reach the prober before it has
// read the reply, both would be read together, and the reply, which the prober needs the arrival
// time of, would have no kernel time. Holding it 1 ms lets the prober (which reads kept-open
// streams at once, without coalescing) read the reply alone; it is still well inside the prober's
// follow-up grace (20 ms). For the same reason a follow-up never goes right after a newer reply:
// when the next probe comes first, the waiting follow-ups go out just before its reply, hold or
// not (the reply then ends whatever the prober reads and keeps its stamp).
#include <cstddef>
#include <cstdint>

#include "net/timestamping.hpp"

namespace weft::probe {

struct StreamEcho {
  uint32_t key = 0;  // OPT_ID of the reply: the stream offset of its last byte
  uint64_t session = 0, seq = 0;
  int64_t prober_tx_ns = 0;
  net::KernelTime rx;       // the probe's receive stamp
  int64_t reply_rx_ns = 0;  // the receive time the reply carried
  int64_t sent_mono = 0;    // when the reply was written
  net::KernelTime tx;       // the reply's send stamp, once read
  bool has_tx = false;
};

class StreamEchoes {
 public:
  static constexpr size_t kCap = 32;
  static constexpr int64_t kHoldNs = 1'000'000;  // see above
  // An echo whose send stamp has not come by then is dropped without a follow-up (the prober has
  // taken the reply's own times after its 20 ms grace).
  static constexpr int64_t kStampWaitNs = 20'000'000;

  bool empty() const { return count_ == 0; }
  bool full() const { return count_ == kCap; }
  size_t size() const { return count_; }

  void push(const StreamEcho& e) {  // callers check full() first
    ring_[(head_ + count_) % kCap] = e;
    ring_[(head_ + count_) % kCap].has_tx = false;
    ++count_;
  }

  // A send stamp read from the error queue; one that matches no waiting echo (a follow-up's, or
  // one for an echo already given up) is ignored. Returns whether it matched.
  bool stamped(uint32_t key, const net::KernelTime& t) {
    for (size_t i = 0; i < count_; ++i) {
      StreamEcho& e = ring_[(head_ + i) % kCap];
      if (e.key == key && !e.has_tx) {
        e.tx = t;
        e.has_tx = true;
        return true;
      }
    }
    return false;
  }

  bool waiting_for_stamp() const { return count_ > 0 && !ring_[head_].has_tx; }

  // The oldest echo when it is due: stamped and held kHoldNs (or stamped at all, when a new reply
  // is about to go: `before_reply`), or unstamped for kStampWaitNs (the caller then sends nothing
  // for it). Follow-ups go in reply order.
  const StreamEcho* due(int64_t now_mono, bool before_reply = false) const {
    if (count_ == 0) return nullptr;
    const StreamEcho& e = ring_[head_];
    if (e.has_tx && before_reply) return &e;
    return now_mono >= e.sent_mono + (e.has_tx ? kHoldNs : kStampWaitNs) ? &e : nullptr;
  }
  void pop() {
    head_ = (head_ + 1) % kCap;
    --count_;
  }

  // When the oldest echo becomes due if nothing else happens (a stamp coming makes it sooner).
  int64_t next_due() const {
    if (count_ == 0) return INT64_MAX;
    const StreamEcho& e = ring_[head_];
    return e.sent_mono + (e.has_tx ? kHoldNs : kStampWaitNs);
  }

 private:
  StreamEcho ring_[kCap];
  size_t head_ = 0, count_ = 0;
};

}  // namespace weft::probe
