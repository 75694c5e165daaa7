#pragma once
// RTT arithmetic for one answered probe, kept apart from sockets so that it can be unit-tested.
//
// total RTT       = prober receive time - prober send time (kernel timestamps when both exist,
//                   hardware ones when both are hardware; otherwise user-space clock reads)
// responder delay = responder send time - responder receive time (same rules, at the responder)
// network RTT     = total RTT - responder delay
//
// Kernel software timestamps are CLOCK_REALTIME, which can step (NTP). The prober also reads
// CLOCK_MONOTONIC around the send and the receive; a kernel RTT that is negative or larger than the
// monotonic interval around it cannot be true, so the monotonic interval is used instead and the
// sample is marked weird. A responder delay that is negative or larger than the total RTT is
// marked weird too and then not subtracted (the total still counts; network RTT is not sampled).
#include <cstdint>

#include "net/timestamping.hpp"
#include "probe/window.hpp"

namespace weft::probe {

struct ProbeTiming {
  // Prober monotonic clock reads just before the send call and just after the receive returned.
  // (User-space times are only used as a pair, so the monotonic clock is the one to read.)
  int64_t tx_user_mono = 0;
  int64_t rx_user_mono = 0;
  // Kernel timestamps of the probe leaving and the answer arriving (0 = none).
  net::KernelTime tx_kernel, rx_kernel;
  // The responder's times and their wire flags (see wire.hpp); has_responder false for TCP
  // connect probes, where the peer's kernel answers and takes no measurable time of its own.
  int64_t responder_rx_ns = 0, responder_tx_ns = 0;
  // A kernel-measured total RTT that replaces the prober timestamps (TCP_INFO's first RTT sample).
  int64_t kernel_rtt_ns = 0;
  // The one-byte fields last, together (80 bytes, not 88: one per in-flight slot).
  bool has_responder = false;
  uint8_t responder_flags = 0;
};

struct RttSample {
  int64_t total_ns = 0;
  int64_t network_ns = 0;
  int64_t responder_delay_ns = 0;
  bool has_network = false;  // false when the responder delay could not be used
  bool has_responder_delay = false;
  bool weird = false;
  TimestampSource source = TimestampSource::user;
};

// Slack allowed between the kernel RTT and the monotonic interval that must contain it.
inline constexpr int64_t kClockSlackNs = 20'000;

RttSample compute_rtt(const ProbeTiming& t);

// The worse of two sources (hardware < kernel < user).
inline TimestampSource worst(TimestampSource a, TimestampSource b) { return a > b ? a : b; }

}  // namespace weft::probe
