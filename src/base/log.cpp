#include "base/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <memory>
#include <string>

namespace weft {

namespace {
std::shared_ptr<spdlog::logger>& logger_slot() {
  static std::shared_ptr<spdlog::logger> logger = spdlog::stderr_color_mt("weft");
  return logger;
}
}  // namespace

spdlog::logger& log() { return *logger_slot(); }

void init_logging(std::string_view level) {
  auto& l = logger_slot();
  l->set_level(spdlog::level::from_str(std::string(level)));
  l->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
}

}  // namespace weft
