#include "stack/tcp/congestion.hpp"

#include <algorithm>
#include <cmath>

namespace weft::stack::tcp {

namespace {
constexpr double kC = 0.4;     // RFC 9438 4.1: the cubic's scaling constant, segments / s^3
constexpr double kBeta = 0.7;  // RFC 9438 4.6: the multiplicative decrease
// RFC 9438 4.3: Reno-friendly additive increase with CUBIC's beta, in segments per RTT.
constexpr double kAlpha = 3.0 * (1.0 - kBeta) / (1.0 + kBeta);
}  // namespace

uint32_t CongestionControl::on_congestion(uint32_t flight, uint32_t smss) {
  reno_acked_ = 0;
  if (algo_ == CcAlgorithm::reno) return std::max(flight / 2, 2 * smss);
  const double w = static_cast<double>(flight) / smss;
  w_max_ = w < w_max_ ? w * (1.0 + kBeta) / 2.0 : w;  // fast convergence (RFC 9438 4.7)
  epoch_start_ = -1;
  carry_ = 0;
  // beta 0.7 in integers: 0.7 as a double is a hair under, and 5840 * 0.7 would give 4087.
  return std::max(static_cast<uint32_t>(uint64_t{flight} * 7 / 10), 2 * smss);
}

uint32_t CongestionControl::reno_ack(uint32_t cwnd, uint32_t acked, uint32_t smss) {
  reno_acked_ += acked;  // one SMSS per cwnd acknowledged (RFC 5681 3.1, byte counting)
  if (reno_acked_ >= cwnd) {
    reno_acked_ -= cwnd;
    cwnd += smss;
  }
  return cwnd;
}

uint32_t CongestionControl::on_ack(uint32_t cwnd, uint32_t acked, uint32_t smss, int64_t now_ns,
                                   int64_t srtt_ns) {
  if (algo_ == CcAlgorithm::reno) return reno_ack(cwnd, acked, smss);
  const double w = static_cast<double>(cwnd) / smss;
  if (epoch_start_ < 0) {  // the first ACK in congestion avoidance after an event (RFC 9438 4.2)
    epoch_start_ = now_ns;
    if (w < w_max_) {
      k_ = std::cbrt((w_max_ - w) / kC);
    } else {  // no loss yet, or grown past it: the cubic starts here, convex
      k_ = 0;
      w_max_ = w;
    }
    w_est_ = w;
  }
  // W_cubic(t + RTT): where the window should be one RTT from now (RFC 9438 4.2).
  const double t = static_cast<double>(now_ns - epoch_start_ + srtt_ns) / 1e9;
  double target = kC * (t - k_) * (t - k_) * (t - k_) + w_max_;
  target = std::clamp(target, w, 1.5 * w);
  const double acked_seg = static_cast<double>(acked) / smss;
  w_est_ += (w_est_ < w_max_ ? kAlpha : 1.0) * acked_seg / w;
  double next = target < w_est_ ? w_est_ : w + (target - w) * acked_seg / w;
  next = std::max(next, w) * smss + carry_;
  const double whole = std::floor(next);
  carry_ = next - whole;
  return std::max(cwnd, static_cast<uint32_t>(std::min(whole, 1073741824.0)));
}

}  // namespace weft::stack::tcp
