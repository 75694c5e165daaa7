#pragma once
// Congestion avoidance and the window after a loss, kept apart from the connection's state
// machine: CUBIC (RFC 9438, the default, as in Linux) or Reno (RFC 5681), chosen per connection.
// Slow start, fast recovery and the loss window after a timeout stay in Connection (the same for
// both); this decides ssthresh at a congestion event and how cwnd grows past ssthresh.
#include <cstdint>

namespace weft::stack::tcp {

enum class CcAlgorithm : uint8_t { reno, cubic };

class CongestionControl {
 public:
  explicit CongestionControl(CcAlgorithm a) : algo_(a) {}

  CcAlgorithm algorithm() const { return algo_; }

  // A congestion event (fast retransmit or the first timeout) with `flight` bytes outstanding:
  // returns ssthresh. Reno halves (RFC 5681 eq. 4); CUBIC multiplies by beta 0.7 and remembers
  // W_max, lowered further when the last one was not reached (fast convergence, RFC 9438 4.7).
  uint32_t on_congestion(uint32_t flight, uint32_t smss);

  // `acked` bytes acknowledged in congestion avoidance (cwnd >= ssthresh) at `now_ns` with the
  // smoothed RTT `srtt_ns`: returns the new cwnd (never below `cwnd`).
  uint32_t on_ack(uint32_t cwnd, uint32_t acked, uint32_t smss, int64_t now_ns, int64_t srtt_ns);

  // CUBIC's W_max in segments (for tests).
  double w_max() const { return w_max_; }

 private:
  uint32_t reno_ack(uint32_t cwnd, uint32_t acked, uint32_t smss);

  CcAlgorithm algo_;
  uint32_t reno_acked_ = 0;  // bytes acknowledged toward the next +SMSS (byte counting)
  // CUBIC state, in segments and seconds (RFC 9438 4.1).
  double w_max_ = 0;
  double k_ = 0;
  double w_est_ = 0;          // the Reno-friendly estimate (RFC 9438 4.3)
  double carry_ = 0;          // growth below one byte, kept for the next ACK
  int64_t epoch_start_ = -1;  // start of this congestion-avoidance epoch; -1 = none yet
};

}  // namespace weft::stack::tcp
