#include "proto/protocol.hpp"

namespace weft::proto {

const char* to_string(Protocol p) {
  switch (p) {
    case Protocol::udp:
      return "udp";
    case Protocol::tcp:
      return "tcp";
    case Protocol::rdma:
      return "rdma";
  }
  return "unknown";
}

const char* to_string(TimestampSource s) {
  switch (s) {
    case TimestampSource::hardware:
      return "hardware";
    case TimestampSource::kernel:
      return "kernel";
    case TimestampSource::user:
      return "user";
  }
  return "unknown";
}

Result<Protocol> parse_protocol(std::string_view name) {
  if (name == "udp") return Protocol::udp;
  if (name == "tcp") return Protocol::tcp;
  if (name == "rdma") return Protocol::rdma;
  return fail("unknown protocol '{}' (expected udp, tcp or rdma)", name);
}

Result<TimestampSource> parse_timestamp_source(std::string_view name) {
  if (name == "hardware") return TimestampSource::hardware;
  if (name == "kernel") return TimestampSource::kernel;
  if (name == "user") return TimestampSource::user;
  return fail("unknown timestamp source '{}' (expected hardware, kernel or user)", name);
}

}  // namespace weft::proto
