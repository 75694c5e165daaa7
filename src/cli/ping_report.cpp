#include "cli/ping_report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

#include "proto/window_counters.hpp"

namespace weft::cli {

double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }
double us(int64_t ns) { return std::round(static_cast<double>(ns) / 10.0) / 100.0; }

nlohmann::json summary_json(const LogHistogram& h) {
  return {{"count", h.count()},
          {"min", us(h.min())},
          {"mean", us(h.mean())},
          {"p50", us(h.percentile(0.50))},
          {"p90", us(h.percentile(0.90))},
          {"p99", us(h.percentile(0.99))},
          {"max", us(h.max())}};
}

nlohmann::json latency_json(const probe::LatencySummary& s) {
  return {{"count", s.count},    {"min", us(s.min_ns)}, {"mean", us(s.mean_ns)}, {"p50", us(s.p50_ns)},
          {"p90", us(s.p90_ns)}, {"p99", us(s.p99_ns)}, {"p999", us(s.p999_ns)}, {"max", us(s.max_ns)}};
}

std::string summary_text(const char* what, const LogHistogram& h) {
  if (h.count() == 0) return "";
  return fmt::format("{} min/p50/p99/max = {:.3f}/{:.3f}/{:.3f}/{:.3f} ms\n", what, ms(h.min()),
                     ms(h.percentile(0.5)), ms(h.percentile(0.99)), ms(h.max()));
}

nlohmann::json window_json(const probe::WindowStats& w) {
  nlohmann::json j{{"type", "window"},
                   {"protocol", probe::to_string(w.protocol)},
                   {"target", w.target},
                   {"address", w.target_address},
                   {"start_unix_ns", w.start_unix_ns},
                   {"end_unix_ns", w.end_unix_ns},
                   {"rtt_incl_responder_delay_us", latency_json(w.rtt_incl_responder_delay)},
                   {"network_rtt_us", latency_json(w.network_rtt)},
                   {"responder_delay_us", latency_json(w.responder_delay)}};
  proto::put_window_counters(j, w);
  return j;
}

int bad_args(const std::string& msg) {
  fmt::print(stderr, "weft ping: {}\n", msg);
  return 2;
}

}  // namespace weft::cli
