#pragma once
// The name rules both sides of the agent <-> controller protocol apply, in one place. Every rule is
// ASCII letters, digits, '-', '_' and '.', plus a few characters that one kind of name needs:
//   host name   (agents, report targets, alarm kinds)  + ':' '[' ']'  ("HOST:PORT", "h1:mlx5_1", "[::1]:7")
//   host pattern (config group members / arrows)     + '*' '?'      (shell globs)
//   plain name  (config rule names)                   nothing more
//   device name (RDMA devices, e.g. "mlx5_0")         nothing more, at most 64 bytes
// Checked with a table, not isalnum(): that depends on the locale and is a call per byte, and the
// controller runs valid_host_name for every window it takes in.
#include <cstddef>
#include <string_view>

namespace weft::proto {

inline constexpr size_t kMaxNameLength = 128;   // host and target names, addresses
inline constexpr size_t kMaxTextLength = 1024;  // alarm messages
inline constexpr size_t kMaxDeviceNameLength = 64;

bool valid_host_name(std::string_view s);
bool valid_host_pattern(std::string_view s);
bool valid_plain_name(std::string_view s);
bool valid_device_name(std::string_view s);

}  // namespace weft::proto
