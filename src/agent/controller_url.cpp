#include "agent/controller_url.hpp"

#include "net/address.hpp"

namespace weft::agent {

Result<ControllerUrl> parse_controller_url(const std::string& url) {
  std::string_view rest = url;
  bool tls = false;
  if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
  } else if (rest.starts_with("https://")) {
    rest.remove_prefix(8);
    tls = true;
  } else if (rest.find("://") != std::string_view::npos) {
    return fail("controller URL '{}': only http:// and https:// are supported", url);
  }
  if (auto slash = rest.find('/'); slash != std::string_view::npos) rest = rest.substr(0, slash);
  auto hp = net::split_host_port(rest, tls ? 443 : 80);  // HOST:PORT is parsed in one place (net/address.hpp)
  if (!hp) return fail("controller URL '{}': {} (expected http[s]://HOST:PORT)", url, hp.error().message);
  return ControllerUrl{std::move(hp->first), hp->second, tls};
}

std::string ControllerUrl::scheme_host_port() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (tls ? "https://" : "http://") + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
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
