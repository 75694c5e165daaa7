#include "agent/controller_url.hpp"

#include "net/address.hpp"

namespace weft::agent {

Result<ControllerUrl> parse_controller_url(const std::string& url) {
  std::string_view rest = url;
  if (rest.starts_with("http://"))
    rest.remove_prefix(7);
  else if (rest.find("://") != std::string_view::npos)
    return fail("controller URL '{}': only http:// is supported", url);
  if (auto slash = rest.find('/'); slash != std::string_view::npos) rest = rest.substr(0, slash);
  auto hp = net::split_host_port(rest, 80);  // HOST:PORT is parsed in one place (net/address.hpp)
  if (!hp) return fail("controller URL '{}': {} (expected http://HOST:PORT)", url, hp.error().message);
  return ControllerUrl{std::move(hp->first), hp->second};
}

}  // namespace weft::agent
