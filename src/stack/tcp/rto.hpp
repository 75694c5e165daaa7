#pragma once
// The retransmission timeout of RFC 6298: SRTT and RTTVAR from RTT samples (alpha 1/8, beta 1/4,
// K = 4), RTO = SRTT + max(G, 4 RTTVAR), clamped to [min, max]; doubled on every timeout (backoff)
// until a new sample arrives. Karn's rule is the caller's: never sample a retransmitted segment.
#include <algorithm>
#include <cstdint>

namespace weft::stack::tcp {

class RtoEstimator {
 public:
  struct Config {
    int64_t initial_ns = 1'000'000'000;  // RFC 6298 2.1
    int64_t min_ns = 200'000'000;        // Linux's TCP_RTO_MIN; RFC 6298 2.4 says 1 s
    int64_t max_ns = 60'000'000'000;     // RFC 6298 2.5 allows a maximum of at least 60 s
    int64_t granularity_ns = 1'000'000;  // G: the timer's tick
  };

  RtoEstimator() : RtoEstimator(Config{}) {}
  explicit RtoEstimator(Config c) : cfg_(c), rto_(c.initial_ns) {}

  void sample(int64_t rtt_ns) {
    rtt_ns = std::max<int64_t>(rtt_ns, 0);
    if (!have_sample_) {
      srtt_ = rtt_ns;
      rttvar_ = rtt_ns / 2;
      have_sample_ = true;
    } else {
      const int64_t err = srtt_ > rtt_ns ? srtt_ - rtt_ns : rtt_ns - srtt_;
      rttvar_ = rttvar_ - rttvar_ / 4 + err / 4;
      srtt_ = srtt_ - srtt_ / 8 + rtt_ns / 8;
    }
    backoff_ = 0;
    rto_ = std::clamp(srtt_ + std::max(cfg_.granularity_ns, 4 * rttvar_), cfg_.min_ns, cfg_.max_ns);
  }

  // A timeout: the next RTO doubles (RFC 6298 5.5).
  void back_off() {
    if (backoff_ < 30) ++backoff_;
  }

  int64_t rto_ns() const {
    int64_t r = rto_;
    for (int i = 0; i < backoff_ && r < cfg_.max_ns; ++i) r *= 2;
    return std::min(r, cfg_.max_ns);
  }
  int64_t srtt_ns() const { return srtt_; }
  int64_t rttvar_ns() const { return rttvar_; }
  bool has_sample() const { return have_sample_; }
  int backoffs() const { return backoff_; }

 private:
  Config cfg_;
  int64_t srtt_ = 0;
  int64_t rttvar_ = 0;
  int64_t rto_;
  int backoff_ = 0;
  bool have_sample_ = false;
};

}  // namespace weft::stack::tcp
