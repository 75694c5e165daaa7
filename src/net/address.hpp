#pragma once
// IPv4/IPv6 socket addresses: parsing of literals and "HOST:PORT" forms, and printing.
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace weft::net {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  int family() const { return storage.ss_family; }
  uint16_t port() const;
  void set_port(uint16_t port);
  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&storage); }
  sockaddr* sa() { return reinterpret_cast<sockaddr*>(&storage); }
  std::string ip_string() const;  // "10.0.0.1", "::1"
  std::string to_string() const;  // "10.0.0.1:7777", "[::1]:7777"
  bool is_unspecified() const;    // 0.0.0.0 or ::
  // Same family, address and port (IPv4-mapped IPv6 addresses compare equal to IPv4 ones).
  bool same_endpoint(const SocketAddress& other) const;

  static SocketAddress from_sockaddr(const sockaddr* sa, socklen_t len);
  // An IPv4 or IPv6 literal (IPv6 may carry a %scope), no brackets.
  static Result<SocketAddress> parse_ip(std::string_view ip, uint16_t port);
  // "IP", "IP:PORT", "[IPv6]:PORT" or a bare IPv6 literal; the port defaults to default_port.
  static Result<SocketAddress> parse_endpoint(std::string_view text, uint16_t default_port);
};

// Splits "HOST:PORT" / "[HOST]:PORT" / "HOST" (a bare IPv6 literal is a host). Fails on a bad port.
// Port 0 is refused unless allow_port_zero: a listener given port 0 takes any free port (tests).
Result<std::pair<std::string, uint16_t>> split_host_port(std::string_view text, uint16_t default_port,
                                                         bool allow_port_zero = false);

// Resolves a host name or literal to one address (IPv4 preferred), for command-line use.
Result<SocketAddress> resolve(std::string_view host, uint16_t port);

}  // namespace weft::net
