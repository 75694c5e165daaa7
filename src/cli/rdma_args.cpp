#include "cli/rdma_args.hpp"

#include <fmt/format.h>

namespace weft::cli {

CLI::Option* add_device_option(CLI::App* app, std::string& device) {
  return app->add_option("-d,--device", device, "RDMA device (default: the first)");
}

CLI::Option* add_timeout_ms_option(CLI::App* app, int& timeout_ms, const char* what) {
  // 0 or a negative limit would make every wait fail at once (or never end): refuse it.
  return app->add_option("--timeout-ms", timeout_ms, what)
      ->capture_default_str()
      ->check(CLI::Range(1, 3'600'000));
}

CLI::Option* add_size_option(CLI::App* app, uint32_t& size, const char* what) {
  // Bounded like perftest: buffer maths on sizes near 4 GiB would wrap.
  return app->add_option("--size", size, what)
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, kRdmaMaxMessage));
}

Status check_ud_size(uint64_t size, uint32_t mtu_bytes, const std::string& device) {
  if (size <= mtu_bytes) return {};
  return fail("a UD message must fit one packet: --size {} is above the active MTU of {} ({} bytes)", size,
              device, mtu_bytes);
}

}  // namespace weft::cli
