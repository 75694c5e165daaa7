#pragma once
// The default wake-up periods of the prober's and the responder's event loops (ProberConfig,
// ResponderConfig, `weft responder`, `weft bench probe`; wake_coalescer.hpp explains the scheme).
//
// kDefaultMaxCoalesce is also the bound on the responder's hold: a responder that woke less than
// this long ago answers a new probe only when the period is over, so the probe's responder delay,
// and the rtt_incl_responder_delay that includes it, carry 0 to kDefaultMaxCoalesce of waiting
// (plus scheduling delay on a loaded host) whenever probes arrive more often than that. The
// network RTT does not: the wait lies between the responder's kernel receive and send stamps
// (docs/probe.md "RTT fields"). `weft responder --max-hold-us` (alias --max-coalesce-us) bounds it
// lower, at the cost of more wake-ups.
#include <chrono>

namespace weft::probe {

inline constexpr std::chrono::milliseconds kDefaultCoalesce{1};     // the shortest, under heavy load
inline constexpr std::chrono::milliseconds kDefaultMaxCoalesce{5};  // otherwise; the responder's hold bound

}  // namespace weft::probe
