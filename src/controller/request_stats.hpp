#pragma once
// Server-side timing of the controller's HTTP requests, per route and stage (net/http's
// RequestTiming: read, queue, handler, reply), as Prometheus histograms on /metrics. They tell
// where an API answer's tail comes from: waiting for a worker of its lane (queue), the handler's
// own work (handler), or the event loop (read, reply). Recording is lock-free (relaxed atomics), as
// it runs on the server's event loop for every request.
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "controller/metrics_text.hpp"
#include "net/http/server.hpp"

namespace weft::controller {

class RequestStats {
 public:
  // Upper bounds of the buckets, in seconds (then +Inf).
  static constexpr std::array<double, 14> kBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                     0.1,    0.25,  0.5,    1,     2.5,  5,     10};
  static constexpr size_t kStages = 4;  // read, queue, handler, reply

  // `routes`: "METHOD PATTERN" of every route that can be recorded (others are counted as "other").
  explicit RequestStats(std::vector<std::string> routes);

  void record(const net::http::RequestTiming& t);
  // Appends weft_controller_http_request_stage_seconds (histogram by route and stage) and
  // weft_controller_http_responses_total (by route and status class).
  void render(PromText& out) const;

  // For tests and benchmarks: requests recorded for a route (all statuses), and how many of its
  // `stage` times were at most `bound_s` (bound_s one of kBounds).
  uint64_t count(std::string_view route) const;
  uint64_t at_most(std::string_view route, size_t stage, double bound_s) const;

 private:
  struct Hist {
    std::array<std::atomic<uint64_t>, kBounds.size() + 1> buckets{};  // last = above every bound
    std::atomic<uint64_t> sum_ns{0};
  };
  struct PerRoute {
    std::array<Hist, kStages> stages;
    std::array<std::atomic<uint64_t>, 5> status{};  // 1xx..5xx
  };
  size_t index(std::string_view method, std::string_view pattern) const;
  size_t index(std::string_view route) const;

  std::vector<std::string> names_;  // routes, then "other"
  std::unique_ptr<PerRoute[]> per_;
};

}  // namespace weft::controller
