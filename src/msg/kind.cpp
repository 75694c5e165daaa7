#include "msg/kind.hpp"

namespace weft::msg {

const std::vector<Kind>& all_kinds() {
  static const std::vector<Kind> k{Kind::send_recv,  Kind::send_recv_srq, Kind::read_pull, Kind::simplex_ring,
                                   Kind::magic_ring, Kind::duplex_ring,   Kind::faa_ring};
  return k;
}

std::string_view to_string(Kind k) {
  switch (k) {
    case Kind::send_recv:
      return "send-recv";
    case Kind::send_recv_srq:
      return "send-recv-srq";
    case Kind::read_pull:
      return "read-pull";
    case Kind::simplex_ring:
      return "simplex-ring";
    case Kind::magic_ring:
      return "magic-ring";
    case Kind::duplex_ring:
      return "duplex-ring";
    case Kind::faa_ring:
      return "faa-ring";
    case Kind::shared_ring:
      return "shared-ring";
  }
  return "?";
}

Result<Kind> parse_kind(std::string_view s) {
  for (Kind k : all_kinds())
    if (to_string(k) == s) return k;
  if (s == to_string(Kind::shared_ring)) return Kind::shared_ring;
  return fail(
      "unknown connection type '{}' (send-recv|send-recv-srq|read-pull|simplex-ring|magic-ring|"
      "duplex-ring|faa-ring|shared-ring)",
      s);
}

}  // namespace weft::msg
