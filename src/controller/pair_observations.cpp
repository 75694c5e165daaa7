#include "controller/pair_observations.hpp"

namespace weft::controller {

std::vector<FlowObservation> pair_observations(const std::vector<PairWindow>& pairs) {
  std::vector<FlowObservation> out;
  out.reserve(pairs.size());
  for (const PairWindow& p : pairs) {
    FlowObservation o;
    o.protocol = p.window.protocol;
    o.src = p.src;
    o.dst = p.dst;
    o.start_unix_ns = p.window.start_unix_ns;
    o.end_unix_ns = p.window.end_unix_ns;
    o.sent = p.window.sent;
    o.lost = p.window.lost;
    o.rtt_p50_ns = p.median_rtt_ns();
    o.baseline_rtt_ns = p.baseline_rtt_ns;
    o.responder_delay_p50_ns = p.window.responder_delay.count ? p.window.responder_delay.p50_ns : 0;
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace weft::controller
