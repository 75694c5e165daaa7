#pragma once
// Socket set-up used by probers and responders. Every socket is non-blocking and close-on-exec.
#include <cstdint>

#include "base/fd.hpp"
#include "base/result.hpp"
#include "net/address.hpp"

namespace weft::net {

// A UDP socket bound to `bind` (port 0 = ephemeral). An IPv6 wildcard also serves IPv4 (dual
// stack); any other IPv6 address is IPv6 only. Receive/send buffers are raised for bursts.
Result<Fd> udp_socket(const SocketAddress& bind);

// A listening TCP socket (SO_REUSEADDR) on `bind`.
Result<Fd> tcp_listener(const SocketAddress& bind, int backlog);

// A non-blocking TCP socket whose connect() to `to` is under way (or already done).
// `bind` may be unspecified (family only). Closing it sends a RST (SO_LINGER 0) so that probes
// leave no TIME_WAIT behind. `no_delay`: TCP_NODELAY, for a connection that carries frames; a
// connect probe sends nothing and saves the call (issue 17: a system call a probe counts at 40K/s).
Result<Fd> tcp_connect_start(const SocketAddress& bind, const SocketAddress& to, bool no_delay = true);

// Asks for IP_PKTINFO / IPV6_RECVPKTINFO so that replies can leave from the address asked.
Status enable_pktinfo(int fd, int family);

Result<SocketAddress> local_address(int fd);
int socket_error(int fd);  // SO_ERROR, 0 when none

// Raises RLIMIT_NOFILE's soft limit to the hard limit; returns the new soft limit.
uint64_t raise_fd_limit();

}  // namespace weft::net
