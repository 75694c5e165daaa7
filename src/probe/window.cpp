#include "probe/window.hpp"

namespace weft::probe {

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

}  // namespace weft::probe
