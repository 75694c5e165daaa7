#pragma once
// Protocol and timestamp-source names, as agents, the controller, URLs and config spell them.
// Part of the agent <-> controller protocol (src/proto), so both sides and the probers share one
// enum and one parser.
#include <cstdint>
#include <string_view>

#include "base/result.hpp"

namespace weft::proto {

enum class Protocol : uint8_t { udp, tcp, rdma };

// Where the RTT timestamps came from, worst source used in the window wins.
enum class TimestampSource : uint8_t { hardware, kernel, user };

const char* to_string(Protocol p);
const char* to_string(TimestampSource s);

// "udp", "tcp", "rdma"; anything else is an error that lists the valid names.
Result<Protocol> parse_protocol(std::string_view name);
// "hardware", "kernel", "user".
Result<TimestampSource> parse_timestamp_source(std::string_view name);

}  // namespace weft::proto
