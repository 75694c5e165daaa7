#include "cli/hw_timestamps.hpp"

#include <fmt/format.h>

#include "base/log.hpp"
#include "net/nic_timestamping.hpp"

namespace weft::cli {

bool enable_hw_timestamps(std::span<const std::string> interfaces, std::string_view command) {
  for (const auto& ifname : interfaces) {
    auto hw = net::enable_nic_timestamping(ifname);
    if (!hw) {
      fmt::print(stderr, "weft {}: {}\n", command, hw.error().message);
      return false;
    }
    log().info("{}: hardware timestamps {}", ifname, net::to_string(*hw));
  }
  return true;
}

}  // namespace weft::cli
