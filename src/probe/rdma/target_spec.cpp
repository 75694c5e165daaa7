#include "probe/rdma/target_spec.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>

#include "proto/names.hpp"

namespace weft::probe {

Result<RdmaTargetSpec> parse_rdma_target(std::string_view text) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0)
    return fail("bad RDMA target '{}': expected DEVICE:GID, DEVICE:HOST or DEVICE:lid:N", text);
  RdmaTargetSpec s;
  s.device = std::string(text.substr(0, colon));
  if (!proto::valid_device_name(s.device)) return fail("bad RDMA device name '{}' in '{}'", s.device, text);
  std::string_view rest = text.substr(colon + 1);
  if (rest.empty()) return fail("bad RDMA target '{}': nothing after the device", text);
  if (rest.starts_with("lid:")) {
    std::string_view n = rest.substr(4);
    unsigned v = 0;
    const bool hex = n.starts_with("0x");
    const char* first = n.data() + (hex ? 2 : 0);
    auto [p, ec] = std::from_chars(first, n.data() + n.size(), v, hex ? 16 : 10);
    // Unicast LIDs are 0x0001-0xbfff.
    if (first == n.data() + n.size() || ec != std::errc() || p != n.data() + n.size() || v == 0 || v > 0xbfff)
      return fail("bad LID '{}' in '{}' (1-49151)", n, text);
    s.kind = RdmaTargetSpec::Kind::lid;
    s.lid = static_cast<uint16_t>(v);
    return s;
  }
  if (rest.find(':') != std::string_view::npos) {
    std::string g(rest);
    if (inet_pton(AF_INET6, g.c_str(), s.gid.raw) != 1) return fail("bad GID '{}' in '{}'", rest, text);
    s.kind = RdmaTargetSpec::Kind::gid;
    return s;
  }
  s.kind = RdmaTargetSpec::Kind::host;
  s.host = std::string(rest);
  return s;
}

}  // namespace weft::probe
