#pragma once
// `--hw-timestamps IFACE` for ping, responder and agent: switch each NIC's hardware stamps on
// before any socket exists, so that every probe gets them from its first packet.
#include <span>
#include <string>
#include <string_view>

namespace weft::cli {

// False (the reason printed as "weft COMMAND: ...") at the first interface that cannot stamp.
bool enable_hw_timestamps(std::span<const std::string> interfaces, std::string_view command);

}  // namespace weft::cli
