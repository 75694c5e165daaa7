// RequestStats (controller/request_stats.hpp): per-route, per-stage histograms of the server's
// request timings, rendered as Prometheus histograms on /metrics.
#include "controller/request_stats.hpp"

#include <gtest/gtest.h>

#include <string>

namespace weft::controller {
namespace {

net::http::RequestTiming timing(std::string_view method, std::string_view pattern, int status,
                                int64_t queue_ns, int64_t handler_ns) {
  net::http::RequestTiming t;
  t.method = method;
  t.pattern = pattern;
  t.status = status;
  t.read_ns = 100'000;
  t.queue_ns = queue_ns;
  t.handler_ns = handler_ns;
  t.reply_ns = 200'000;
  return t;
}

TEST(RequestStats, CountsPerRouteAndStageIntoTheRightBuckets) {
  RequestStats s({"GET /healthz", "GET /api/v1/mesh"});
  s.record(timing("GET", "/healthz", 200, 300'000, 2'000'000));      // queue 0.3 ms, handler 2 ms
  s.record(timing("GET", "/healthz", 200, 700'000'000, 1'000'000));  // queue 700 ms
  s.record(timing("GET", "/api/v1/mesh", 404, 0, 30'000'000));
  s.record(timing("POST", "/nowhere", 500, 0, 0));  // not a named route: "other"
  EXPECT_EQ(s.count("GET /healthz"), 2u);
  EXPECT_EQ(s.count("GET /api/v1/mesh"), 1u);
  EXPECT_EQ(s.count("other"), 1u);
  EXPECT_EQ(s.at_most("GET /healthz", 1, 0.0005), 1u);  // queue: one at <= 0.5 ms
  EXPECT_EQ(s.at_most("GET /healthz", 1, 0.5), 1u);     // ... the other above 500 ms
  EXPECT_EQ(s.at_most("GET /healthz", 1, 1), 2u);
  EXPECT_EQ(s.at_most("GET /healthz", 2, 0.001), 1u);  // handler: 1 ms is <= 1 ms (le is inclusive)
  EXPECT_EQ(s.at_most("GET /healthz", 2, 0.0025), 2u);
  EXPECT_EQ(s.at_most("GET /api/v1/mesh", 2, 0.025), 0u);
  EXPECT_EQ(s.at_most("GET /api/v1/mesh", 2, 0.05), 1u);

  PromText t;
  s.render(t);
  const std::string& x = t.text();
  EXPECT_NE(x.find("# TYPE weft_controller_http_request_stage_seconds histogram\n"), std::string::npos);
  EXPECT_NE(x.find("weft_controller_http_request_stage_seconds_bucket{route=\"GET /healthz\",stage=\"queue\","
                   "le=\"0.5\"} 1\n"),
            std::string::npos);
  EXPECT_NE(x.find("weft_controller_http_request_stage_seconds_bucket{route=\"GET /healthz\",stage=\"queue\","
                   "le=\"+Inf\"} 2\n"),
            std::string::npos);
  EXPECT_NE(
      x.find(
          "weft_controller_http_request_stage_seconds_sum{route=\"GET /healthz\",stage=\"queue\"} 0.7003\n"),
      std::string::npos);
  EXPECT_NE(x.find("weft_controller_http_request_stage_seconds_count{route=\"GET "
                   "/api/v1/mesh\",stage=\"handler\"} 1\n"),
            std::string::npos);
  EXPECT_NE(x.find("weft_controller_http_responses_total{route=\"GET /api/v1/mesh\",code=\"4xx\"} 1\n"),
            std::string::npos);
  EXPECT_NE(x.find("weft_controller_http_responses_total{route=\"other\",code=\"5xx\"} 1\n"),
            std::string::npos);
  // Buckets are cumulative and never decrease.
  EXPECT_NE(x.find("route=\"GET /healthz\",stage=\"handler\",le=\"0.0025\"} 2\n"), std::string::npos);
}

}  // namespace
}  // namespace weft::controller
