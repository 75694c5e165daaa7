#pragma once
// The controller's address as agents and `weft mesh` are given it: http[s]://HOST[:PORT][/...],
// HOST a name, an IPv4 literal or a bracketed IPv6 literal (brackets removed), PORT 80 (http) or
// 443 (https) if absent.
#include <string>
#include <vector>

#include "base/result.hpp"

namespace weft::agent {

struct ControllerUrl {
  std::string host;
  int port = 80;
  bool tls = false;  // https://

  // "https://HOST:PORT" as httplib takes it (an IPv6 literal in brackets).
  std::string scheme_host_port() const;
};

Result<ControllerUrl> parse_controller_url(const std::string& url);

// Several replicas of one controller (they share a store, docs/store-redis.md): "URL,URL,...".
// The agent talks to the first and moves on to the next when one is unreachable or answers 503.
Result<std::vector<ControllerUrl>> parse_controller_urls(const std::string& list);

}  // namespace weft::agent
