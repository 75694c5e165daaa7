#include "probe/rdma/rtt.hpp"

namespace weft::probe {

std::optional<int64_t> StampClock::interval_ns(const CompletionStamp& earlier,
                                               const CompletionStamp& later) const {
  if (!hardware()) {
    const int64_t d = later.poll_mono_ns - earlier.poll_mono_ns;
    if (d < 0) return std::nullopt;
    return d;
  }
  const uint64_t ticks = nic_.delta_ticks(earlier.nic_ticks, later.nic_ticks);
  // More than half a period "ahead" is really a step backwards across no wrap at all.
  if (ticks > nic_.mask() / 2) return std::nullopt;
  const uint64_t ns = nic_.to_ns(ticks);
  if (ns > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(ns);
}

StampChoice choose_stamp_clock(bool want_hardware, std::optional<rdma::NicClock> device_clock,
                               const std::string& device_error) {
  StampChoice c;
  if (!want_hardware) {
    c.why = "hardware timestamps not requested";
  } else if (!device_clock) {
    c.why = device_error.empty() ? "no device clock" : device_error;
  } else if (!device_clock->valid()) {
    c.why = "device clock unusable (hca_core_clock " + std::to_string(device_clock->khz()) +
            " kHz, completion_timestamp_mask " + std::to_string(device_clock->mask()) + ")";
  } else {
    c.clock = StampClock::hardware(*device_clock);
  }
  return c;
}

RttSample compute_rdma_rtt(const StampClock& clock, const RdmaProbeTiming& t) {
  RttSample s;
  // The software interval that must contain the true round trip: from before the post to the poll.
  const int64_t outer = t.pong_rx.poll_mono_ns - t.ping_post_mono_ns;
  s.source = clock.source();
  std::optional<int64_t> total = outer;  // software: PING posted .. PONG polled
  if (clock.hardware()) {
    total = clock.interval_ns(t.ping_tx, t.pong_rx);
    if (!total || *total > outer + kClockSlackNs) {
      // The NIC stamps do not add up: the software interval instead.
      s.weird = true;
      s.source = TimestampSource::user;
      total = outer;
    }
  }
  s.total_ns = *total < 0 ? 0 : *total;
  if (!t.has_followup) return s;  // total only: no network RTT without the responder's delay
  s.source = worst(s.source, t.responder_hardware ? TimestampSource::hardware : TimestampSource::user);
  if (t.responder_delay_ns < 0 || t.responder_delay_ns > s.total_ns) {
    s.weird = true;
    return s;
  }
  s.responder_delay_ns = t.responder_delay_ns;
  s.has_responder_delay = true;
  s.network_ns = s.total_ns - t.responder_delay_ns;
  s.has_network = true;
  return s;
}

ResponderDelay responder_delay(const StampClock& clock, const CompletionStamp& ping_rx,
                               const CompletionStamp& pong_tx, int64_t pong_post_mono_ns) {
  if (clock.hardware())
    if (auto d = clock.interval_ns(ping_rx, pong_tx)) return {*d, true};
  const int64_t sw = pong_post_mono_ns - ping_rx.poll_mono_ns;
  return {sw < 0 ? 0 : sw, false};
}

}  // namespace weft::probe
