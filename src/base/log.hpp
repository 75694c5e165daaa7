#pragma once
// One process-wide logger set up once by the CLI; libraries just call weft::log().
#include <spdlog/spdlog.h>

#include <string_view>

namespace weft {

spdlog::logger& log();

// level: trace|debug|info|warn|error|off. Logs go to stderr so stdout stays machine-readable.
void init_logging(std::string_view level);

}  // namespace weft
