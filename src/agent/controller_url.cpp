#include "agent/controller_url.hpp"

#include <charconv>

namespace weft::agent {

Result<ControllerUrl> parse_controller_url(const std::string& url) {
  std::string rest = url;
  if (rest.starts_with("http://"))
    rest = rest.substr(7);
  else if (rest.find("://") != std::string::npos)
    return fail("controller URL '{}': only http:// is supported", url);
  if (auto slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  ControllerUrl u;
  auto bracket = rest.find(']');
  auto colon = rest.rfind(':');
  if (colon != std::string::npos && (bracket == std::string::npos || colon > bracket)) {
    u.host = rest.substr(0, colon);
    auto [p, ec] = std::from_chars(rest.data() + colon + 1, rest.data() + rest.size(), u.port);
    if (ec != std::errc{} || p != rest.data() + rest.size())
      return fail("controller URL '{}': bad port", url);
  } else {
    u.host = rest;
  }
  if (u.host.size() > 2 && u.host.front() == '[') u.host = u.host.substr(1, u.host.size() - 2);
  if (u.host.empty() || u.port <= 0 || u.port > 65535)
    return fail("controller URL '{}': expected http://HOST:PORT", url);
  return u;
}

}  // namespace weft::agent
