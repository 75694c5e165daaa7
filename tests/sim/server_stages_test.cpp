// sim/server_stages.hpp: the controller's request-stage histograms read back from /metrics text.
#include "sim/server_stages.hpp"

#include <gtest/gtest.h>

using weft::sim::server_stages;

TEST(ServerStages, MedianAndP99BucketsPerRouteAndStage) {
  const std::string metrics =
      "# TYPE weft_controller_http_request_stage_seconds histogram\n"
      "weft_controller_http_request_stage_seconds_bucket{route=\"POST "
      "/api/v1/report\",stage=\"handler\",le=\"0.0005\"} 40\n"
      "weft_controller_http_request_stage_seconds_bucket{route=\"POST "
      "/api/v1/report\",stage=\"handler\",le=\"0.005\"} 99\n"
      "weft_controller_http_request_stage_seconds_bucket{route=\"POST "
      "/api/v1/report\",stage=\"handler\",le=\"+Inf\"} 100\n"
      "weft_controller_http_request_stage_seconds_count{route=\"POST /api/v1/report\",stage=\"handler\"} "
      "100\n"
      "weft_controller_http_request_stage_seconds_bucket{route=\"GET "
      "/healthz\",stage=\"read\",le=\"0.0005\"} 1\n"
      "weft_controller_http_request_stage_seconds_bucket{route=\"GET /healthz\",stage=\"read\",le=\"+Inf\"} "
      "4\n"
      "weft_other_bucket{le=\"1\"} 7\n";
  auto j = server_stages(metrics);
  ASSERT_TRUE(j.contains("POST /api/v1/report")) << j.dump();
  const auto& h = j["POST /api/v1/report"]["handler"];
  EXPECT_EQ(h["count"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(h["p50_le_ms"].get<double>(), 5.0);  // 40 of 100 under 0.5 ms: the median is in the next
  EXPECT_DOUBLE_EQ(h["p99_le_ms"].get<double>(), 5.0);  // 99 of 100 under 5 ms
  EXPECT_EQ(j["GET /healthz"]["read"]["p50_le_ms"], "+Inf");  // 1 of 4 in the only finite bucket
  EXPECT_EQ(j.size(), 2u);                                    // other families are not stages
}

TEST(ServerStages, NoStagesInTextWithoutTheFamily) { EXPECT_TRUE(server_stages("up 1\n").empty()); }
