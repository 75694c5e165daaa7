#include "net/address.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <netdb.h>

#include <charconv>
#include <cstring>

namespace weft::net {

uint16_t SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return 0;
}

void SocketAddress::set_port(uint16_t port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
}

std::string SocketAddress::ip_string() const {
  char buf[INET6_ADDRSTRLEN + IF_NAMESIZE + 2] = {};
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, buf, sizeof buf);
  } else if (family() == AF_INET6) {
    const auto* s6 = reinterpret_cast<const sockaddr_in6*>(&storage);
    inet_ntop(AF_INET6, &s6->sin6_addr, buf, sizeof buf);
    if (s6->sin6_scope_id != 0) {
      char ifname[IF_NAMESIZE] = {};
      std::string out = buf;
      out += '%';
      out += if_indextoname(s6->sin6_scope_id, ifname) ? ifname : std::to_string(s6->sin6_scope_id);
      return out;
    }
  } else {
    return "?";
  }
  return buf;
}

std::string SocketAddress::to_string() const {
  if (family() == AF_INET6) return "[" + ip_string() + "]:" + std::to_string(port());
  return ip_string() + ":" + std::to_string(port());
}

bool SocketAddress::is_unspecified() const {
  if (family() == AF_INET)
    return reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr.s_addr == INADDR_ANY;
  if (family() == AF_INET6)
    return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr);
  return false;
}

namespace {
// The IPv4 address of an AF_INET or IPv4-mapped AF_INET6 address, or false.
bool ipv4_of(const SocketAddress& a, in_addr& out) {
  if (a.family() == AF_INET) {
    out = reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr;
    return true;
  }
  if (a.family() == AF_INET6) {
    const auto* s6 = reinterpret_cast<const sockaddr_in6*>(&a.storage);
    if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
      std::memcpy(&out, &s6->sin6_addr.s6_addr[12], 4);
      return true;
    }
  }
  return false;
}
}  // namespace

bool SocketAddress::same_endpoint(const SocketAddress& other) const {
  if (port() != other.port()) return false;
  in_addr a4{}, b4{};
  const bool a_is4 = ipv4_of(*this, a4), b_is4 = ipv4_of(other, b4);
  if (a_is4 || b_is4) return a_is4 && b_is4 && a4.s_addr == b4.s_addr;
  if (family() != AF_INET6 || other.family() != AF_INET6) return false;
  return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr,
                     &reinterpret_cast<const sockaddr_in6*>(&other.storage)->sin6_addr, 16) == 0;
}

SocketAddress SocketAddress::from_sockaddr(const sockaddr* sa, socklen_t len) {
  SocketAddress a;
  if (len > sizeof a.storage) len = sizeof a.storage;
  std::memcpy(&a.storage, sa, len);
  a.length = len;
  return a;
}

Result<SocketAddress> SocketAddress::parse_ip(std::string_view ip, uint16_t port) {
  std::string s(ip);
  SocketAddress a;
  auto* s4 = reinterpret_cast<sockaddr_in*>(&a.storage);
  if (inet_pton(AF_INET, s.c_str(), &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons(port);
    a.length = sizeof(sockaddr_in);
    return a;
  }
  auto* s6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
  std::string addr = s;
  uint32_t scope = 0;
  if (auto pct = s.find('%'); pct != std::string::npos) {
    addr = s.substr(0, pct);
    const std::string ifname = s.substr(pct + 1);
    scope = if_nametoindex(ifname.c_str());
    if (scope == 0) {
      auto [p, ec] = std::from_chars(ifname.data(), ifname.data() + ifname.size(), scope);
      if (ec != std::errc() || p != ifname.data() + ifname.size() || scope == 0)
        return fail("'{}': unknown interface '{}' in scope", s, ifname);
    }
  }
  if (inet_pton(AF_INET6, addr.c_str(), &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(port);
    s6->sin6_scope_id = scope;
    a.length = sizeof(sockaddr_in6);
    return a;
  }
  return fail("'{}' is not an IPv4 or IPv6 address", s);
}

Result<std::pair<std::string, uint16_t>> split_host_port(std::string_view text, uint16_t default_port,
                                                         bool allow_port_zero) {
  if (text.empty()) return fail("empty address");
  std::string_view host = text, port_text;
  if (text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos) return fail("'{}': missing ']'", text);
    host = text.substr(1, close - 1);
    auto rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return fail("'{}': expected ':PORT' after ']'", text);
      port_text = rest.substr(1);
      if (port_text.empty()) return fail("'{}': empty port", text);
    }
  } else if (auto colon = text.find(':');
             colon != std::string_view::npos && text.find(':', colon + 1) == std::string_view::npos) {
    host = text.substr(0, colon);  // exactly one ':' -> HOST:PORT; several -> a bare IPv6 literal
    port_text = text.substr(colon + 1);
    if (port_text.empty()) return fail("'{}': empty port", text);
  }
  if (host.empty()) return fail("'{}': empty host", text);
  uint16_t port = default_port;
  if (!port_text.empty()) {
    unsigned value = 0;
    auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
    if (ec != std::errc() || p != port_text.data() + port_text.size() || (value == 0 && !allow_port_zero) ||
        value > 65535)
      return fail("'{}': bad port '{}' ({}-65535)", text, port_text, allow_port_zero ? 0 : 1);
    port = static_cast<uint16_t>(value);
  }
  return std::pair{std::string(host), port};
}

Result<SocketAddress> SocketAddress::parse_endpoint(std::string_view text, uint16_t default_port) {
  auto hp = split_host_port(text, default_port);
  if (!hp) return std::unexpected(hp.error());
  return parse_ip(hp->first, hp->second);
}

Result<SocketAddress> resolve(std::string_view host, uint16_t port) {
  if (auto lit = SocketAddress::parse_ip(host, port)) return lit;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  const std::string h(host);
  if (int rc = getaddrinfo(h.c_str(), nullptr, &hints, &res); rc != 0)
    return fail("cannot resolve '{}': {}", h, gai_strerror(rc));
  SocketAddress chosen;
  for (auto* ai = res; ai; ai = ai->ai_next) {
    if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
    if (chosen.length == 0 || (ai->ai_family == AF_INET && chosen.family() != AF_INET))
      chosen = SocketAddress::from_sockaddr(ai->ai_addr, ai->ai_addrlen);
  }
  freeaddrinfo(res);
  if (chosen.length == 0) return fail("'{}' has no IPv4 or IPv6 address", h);
  chosen.set_port(port);
  return chosen;
}

}  // namespace weft::net
