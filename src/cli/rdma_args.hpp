#pragma once
// Arguments every `weft rdma ...` command (and `weft ping rdma`) spells the same way, so that a
// user learns them once: -d/--device, --timeout-ms (positive), --gid-index (0-255, else the
// RoCE v2 GID of the side channel's address), message sizes bounded like perftest's (1 B - 8 MiB;
// UD also by the port's MTU). Bad values are usage errors: CLI11 rejects them and weft exits 2.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "base/result.hpp"

namespace weft::cli {

// perftest's MAX_SIZE: the largest message any of its tests sends (8 MiB).
inline constexpr uint64_t kRdmaMaxMessage = 8u << 20;
// Exit status of a usage error, as everywhere in weft.
inline constexpr int kUsageError = 2;

CLI::Option* add_device_option(CLI::App* app, std::string& device);
CLI::Option* add_timeout_ms_option(CLI::App* app, int& timeout_ms, const char* what = "limit for each wait");
CLI::Option* add_size_option(CLI::App* app, uint32_t& size, const char* what = "message bytes");

// A UD message is one packet: it must fit the port's active MTU (`mtu_bytes`).
Status check_ud_size(uint64_t size, uint32_t mtu_bytes, const std::string& device);

}  // namespace weft::cli
