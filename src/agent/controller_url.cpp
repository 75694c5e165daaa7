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

Result<std::vector<ControllerUrl>> parse_controller_urls(const std::string& list) {
  std::vector<ControllerUrl> out;
  size_t pos = 0;
  while (true) {
    auto comma = list.find(',', pos);
    auto one =
        parse_controller_url(list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (!one) return std::unexpected(one.error());
    out.push_back(std::move(*one));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

}  // namespace weft::agent
