#include "sim/server_stages.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

namespace weft::sim {

nlohmann::json server_stages(const std::string& metrics) {
  constexpr std::string_view kFamily = "weft_controller_http_request_stage_seconds_bucket{";
  // (route, stage) -> [(le, cumulative count)]
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<double, double>>> h;
  size_t pos = 0;
  while (pos < metrics.size()) {
    size_t eol = metrics.find('\n', pos);
    if (eol == std::string::npos) eol = metrics.size();
    std::string_view line(metrics.data() + pos, eol - pos);
    pos = eol + 1;
    if (!line.starts_with(kFamily)) continue;
    auto label = [&](std::string_view name) -> std::string {
      size_t at = line.find(fmt::format("{}=\"", name));
      if (at == std::string_view::npos) return {};
      at += name.size() + 2;
      return std::string(line.substr(at, line.find('"', at) - at));
    };
    std::string le = label("le");
    double bound = le == "+Inf" ? std::numeric_limits<double>::infinity() : std::strtod(le.c_str(), nullptr);
    double count = std::strtod(std::string(line.substr(line.rfind(' ') + 1)).c_str(), nullptr);
    h[{label("route"), label("stage")}].emplace_back(bound, count);
  }
  nlohmann::json out = nlohmann::json::object();
  for (auto& [key, buckets] : h) {
    std::sort(buckets.begin(), buckets.end());
    double total = buckets.empty() ? 0 : buckets.back().second;
    auto at = [&](double q) -> nlohmann::json {
      for (const auto& [le, c] : buckets)
        if (c >= q * total) return std::isinf(le) ? nlohmann::json("+Inf") : nlohmann::json(le * 1e3);
      return nullptr;
    };
    out[key.first][key.second] = {{"count", total}, {"p50_le_ms", at(0.5)}, {"p99_le_ms", at(0.99)}};
  }
  return out;
}

}  // namespace weft::sim
