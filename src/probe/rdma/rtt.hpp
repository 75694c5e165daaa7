#pragma once
// RDMA probe timing, kept apart from verbs so that it is unit-tested on hosts without a device.
//
// Every completion gets a stamp: the NIC completion timestamp in raw ticks when the CQ has them,
// and always the CLOCK_MONOTONIC time at which it was polled. A StampClock says which of the two
// this endpoint measures with and converts raw ticks with the device clock (rdma::NicClock: the
// tick rate is hca_core_clock, not 1 GHz, and the counter wraps at completion_timestamp_mask).
//
//   total RTT        = PONG receive completion - PING send completion            (prober clock)
//   responder delay  = PONG send completion - PING receive completion            (responder clock,
//                      sent in the follow-up)
//   network RTT      = total RTT - responder delay
//
// Software stamps (no NIC clock): receives are stamped when their completion is polled, sends
// when they are posted. A send completion's poll time is only an upper bound of when the datagram
// left (it can be late by a whole wake-up, and then the responder delay looks larger than the round
// trip), while the post time is a lower bound that is off by the device's send processing only.
//
// Two clocks never mix in one difference, so they need not be synchronised. A responder delay
// larger than the total RTT cannot be true (clocks of different NICs that disagree, the seed's
// "weird" class): the sample is marked weird, its total RTT is kept, and neither the delay nor a
// network RTT is sampled, so nothing impossible is averaged in. A hardware total RTT that is
// negative or longer than the software interval that must contain it (PING posted .. PONG polled)
// is replaced by the software interval and marked weird too.
#include <cstdint>
#include <optional>
#include <string>

#include "probe/rtt.hpp"
#include "probe/window.hpp"
#include "rdma/clock.hpp"

namespace weft::probe {

struct CompletionStamp {
  uint64_t nic_ticks = 0;    // raw NIC completion timestamp (hardware clock only)
  int64_t poll_mono_ns = 0;  // CLOCK_MONOTONIC when the completion was polled
};

class StampClock {
 public:
  static StampClock software() { return StampClock(rdma::NicClock(0, 0)); }
  // clk must be valid() (the caller checked the device clock).
  static StampClock hardware(rdma::NicClock clk) { return StampClock(clk); }

  bool hardware() const { return nic_.valid(); }
  TimestampSource source() const { return hardware() ? TimestampSource::hardware : TimestampSource::user; }
  const rdma::NicClock& nic() const { return nic_; }

  // later - earlier in ns on this clock (software: the poll times); nullopt when it would be
  // negative (for the wrapping NIC counter: when later is more than half a period behind earlier).
  std::optional<int64_t> interval_ns(const CompletionStamp& earlier, const CompletionStamp& later) const;

 private:
  explicit StampClock(rdma::NicClock nic) : nic_(nic) {}
  rdma::NicClock nic_;
};

// The clock to measure with: the NIC's when it is wanted and the device has a usable one (and a
// timestamped CQ could be made), else software stamps at polling. `why` says why not hardware.
struct StampChoice {
  StampClock clock = StampClock::software();
  std::string why;  // empty when hardware was chosen
};
StampChoice choose_stamp_clock(bool want_hardware, std::optional<rdma::NicClock> device_clock,
                               const std::string& device_error);

struct RdmaProbeTiming {
  int64_t ping_post_mono_ns = 0;  // just before ibv_post_send of the PING
  CompletionStamp ping_tx;        // PING send completion (its NIC stamp is used, hardware only)
  CompletionStamp pong_rx;        // PONG receive completion
  bool has_followup = false;
  int64_t responder_delay_ns = 0;
  bool responder_hardware = false;  // the follow-up's delay came from NIC stamps
};

RttSample compute_rdma_rtt(const StampClock& clock, const RdmaProbeTiming& t);

// The responder's side: its delay between the PING's receive completion and the PONG's send
// completion, and whether it came from NIC stamps. NIC stamps that go backwards fall back to the
// software times (PONG posted - PING polled), so the follow-up never carries a negative delay.
struct ResponderDelay {
  int64_t ns = 0;
  bool hardware = false;
};
// pong_post_mono_ns: when the PONG was posted (the software send time).
ResponderDelay responder_delay(const StampClock& clock, const CompletionStamp& ping_rx,
                               const CompletionStamp& pong_tx, int64_t pong_post_mono_ns);

}  // namespace weft::probe
