#include "sim/sample_windows.hpp"

namespace weft::sim {

weft::proto::WindowStats sample_window(const std::string& target, int64_t start, uint64_t salt) {
  weft::proto::WindowStats w;
  w.protocol = weft::proto::Protocol::udp;
  w.target = target;
  w.target_address = target;  // short: the bench measures the controller, not address strings
  w.start_unix_ns = start;
  w.end_unix_ns = start + 10'000'000'000;
  w.sent = 100;
  w.lost = salt % 7 == 0 ? 1 : 0;
  w.received = w.sent - w.lost;
  w.timestamp_source = weft::proto::TimestampSource::kernel;
  int64_t base = 40'000 + static_cast<int64_t>(salt % 5000);
  auto fill = [&](weft::proto::LatencySummary& s, int64_t b) {
    s.count = w.received;
    s.min_ns = b;
    s.p50_ns = b + 10'000;
    s.mean_ns = b + 12'000;
    s.p90_ns = b + 20'000;
    s.p95_ns = b + 25'000;
    s.p99_ns = b + 40'000;
    s.p999_ns = b + 45'000;
    s.max_ns = b + 50'000;
  };
  fill(w.rtt_incl_responder_delay, base + 5'000);
  fill(w.network_rtt, base);
  fill(w.responder_delay, 3'000);
  return w;
}

}  // namespace weft::sim
