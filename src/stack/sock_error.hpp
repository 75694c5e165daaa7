#pragma once
// What a socket call on weft's stack can fail with: a closed set of values (the errno each one
// stands for in brackets), so a caller switches on them instead of parsing messages.
#include <cstdint>
#include <expected>

namespace weft::stack {

enum class SockErr : uint8_t {
  again,          // EAGAIN: nothing to read, no room to send, nothing to accept; wait for an event
  reset,          // ECONNRESET: the peer reset the connection
  refused,        // ECONNREFUSED: the peer answered the SYN with an RST
  timed_out,      // ETIMEDOUT: retransmissions (or keepalive probes) ran out
  shut_down,      // EPIPE: sending after close(), or after the connection ended in order
  bad_socket,     // EBADF: not a live handle, or a call for another kind of socket
  in_use,         // EADDRINUSE: the port has a listener or a bound socket already
  no_ports,       // EADDRNOTAVAIL: no free ephemeral port
  no_route,       // ENETUNREACH: not on the subnet and no gateway
  too_big,        // EMSGSIZE: a datagram larger than IPv4 carries (65,507 bytes of UDP payload)
  unreachable,    // EHOSTUNREACH: an ICMP error said the host, network or protocol cannot be reached
  not_connected,  // EDESTADDRREQ: send() on a UDP socket that has no default destination
};

const char* to_string(SockErr e);

template <typename T>
using SockResult = std::expected<T, SockErr>;

}  // namespace weft::stack
