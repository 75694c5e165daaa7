#include "agent/local_host.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>

namespace weft::agent {

// A connected UDP socket sends nothing: connect() only asks the kernel for the route.
Result<std::string> route_source_address(const ControllerUrl& u) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_DGRAM;
  if (int rc = getaddrinfo(u.host.c_str(), std::to_string(u.port).c_str(), &hints, &res); rc != 0)
    return fail("resolve {}: {}", u.host, gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  int fd = ::socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail_errno("socket");
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  bool ok = ::connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0;
  int err = errno;
  ::close(fd);
  if (!ok) return fail_errno(fmt::format("find the local address towards {}", u.host), err);
  char buf[INET6_ADDRSTRLEN] = {};
  const void* a = ss.ss_family == AF_INET
                      ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&ss)->sin_addr)
                      : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr);
  inet_ntop(ss.ss_family, a, buf, sizeof buf);
  return std::string(buf);
}

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

}  // namespace weft::agent
