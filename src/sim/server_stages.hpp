#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace weft::sim {

// The controller's own account of where its requests spent their time (/metrics,
// weft_controller_http_request_stage_seconds): per route and stage, the bucket bounds that hold the
// median and the 99th percentile, in ms ("+Inf" above the last bucket).
nlohmann::json server_stages(const std::string& metrics);

}  // namespace weft::sim
