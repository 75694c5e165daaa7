#include "probe/rtt.hpp"

#include "probe/wire.hpp"

namespace weft::probe {

RttSample compute_rtt(const ProbeTiming& t) {
  RttSample s;
  const int64_t mono_rtt = t.rx_user_mono - t.tx_user_mono;
  int64_t total = 0;
  if (t.kernel_rtt_ns > 0) {
    total = t.kernel_rtt_ns;
    s.source = TimestampSource::kernel;
  } else if (t.tx_kernel.hardware_ns && t.rx_kernel.hardware_ns) {
    total = t.rx_kernel.hardware_ns - t.tx_kernel.hardware_ns;
    s.source = TimestampSource::hardware;
  } else if (t.tx_kernel.software_ns && t.rx_kernel.software_ns) {
    total = t.rx_kernel.software_ns - t.tx_kernel.software_ns;
    s.source = TimestampSource::kernel;
  } else {
    // A kernel time is missing at one end: mixing it with a user-space read would be neither,
    // so both ends are the monotonic user-space reads.
    s.source = TimestampSource::user;
  }
  if (s.source == TimestampSource::user) {
    total = mono_rtt;
  } else if (total < 0 || total > mono_rtt + kClockSlackNs) {
    total = mono_rtt;
    s.source = TimestampSource::user;
    s.weird = true;
  }
  if (total < 0) total = 0;
  s.total_ns = total;

  if (!t.has_responder) {
    s.network_ns = total;
    s.has_network = true;
    return s;
  }
  const uint8_t f = t.responder_flags;
  TimestampSource rs = TimestampSource::user;
  if ((f & wire::kRxHardware) && (f & wire::kTxHardware)) {
    rs = TimestampSource::hardware;
  } else if ((f & (wire::kRxKernel | wire::kRxHardware)) && (f & (wire::kTxKernel | wire::kTxHardware))) {
    rs = TimestampSource::kernel;
  }
  const int64_t delay = t.responder_tx_ns - t.responder_rx_ns;
  if (delay < 0 || delay > total) {
    s.weird = true;
    s.source = worst(s.source, rs);
    return s;
  }
  s.responder_delay_ns = delay;
  s.has_responder_delay = true;
  s.network_ns = total - delay;
  s.has_network = true;
  s.source = worst(s.source, rs);
  return s;
}

}  // namespace weft::probe
