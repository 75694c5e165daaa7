#include "net/socket.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>

namespace weft::net {

namespace {
void try_buffer(int fd, int opt, int force_opt, int bytes) {
  // Best effort: with CAP_NET_ADMIN the FORCE variant may exceed net.core.{r,w}mem_max; without
  // it the kernel caps the plain one there.
  if (setsockopt(fd, SOL_SOCKET, force_opt, &bytes, sizeof bytes) != 0)
    setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof bytes);
}
}  // namespace

Result<Fd> udp_socket(const SocketAddress& bind) {
  Fd fd(::socket(bind.family(), SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fail_errno("socket(udp, " + bind.ip_string() + ")");
  if (bind.family() == AF_INET6) {
    int v6only = bind.is_unspecified() ? 0 : 1;
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
  }
  try_buffer(fd.get(), SO_RCVBUF, SO_RCVBUFFORCE, 4 << 20);
  try_buffer(fd.get(), SO_SNDBUF, SO_SNDBUFFORCE, 4 << 20);
  if (::bind(fd.get(), bind.sa(), bind.length) != 0) return fail_errno("bind udp " + bind.to_string());
  return fd;
}

Result<Fd> tcp_listener(const SocketAddress& bind, int backlog) {
  Fd fd(::socket(bind.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fail_errno("socket(tcp, " + bind.ip_string() + ")");
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind.family() == AF_INET6) {
    int v6only = bind.is_unspecified() ? 0 : 1;
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
  }
  if (::bind(fd.get(), bind.sa(), bind.length) != 0) return fail_errno("bind tcp " + bind.to_string());
  if (::listen(fd.get(), backlog) != 0) return fail_errno("listen tcp " + bind.to_string());
  return fd;
}

Result<Fd> tcp_connect_start(const SocketAddress& bind, const SocketAddress& to, bool no_delay) {
  Fd fd(::socket(to.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fail_errno("socket(tcp, " + to.to_string() + ")");
  linger lg{1, 0};
  setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  int one = 1;
  if (no_delay) setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (bind.length != 0 && !bind.is_unspecified()) {
    setsockopt(fd.get(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    if (::bind(fd.get(), bind.sa(), bind.length) != 0) return fail_errno("bind tcp " + bind.to_string());
  }
  if (::connect(fd.get(), to.sa(), to.length) != 0 && errno != EINPROGRESS)
    return fail_errno("connect tcp " + to.to_string());
  return fd;
}

Status enable_pktinfo(int fd, int family) {
  int one = 1;
  if (family == AF_INET) {
    if (setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one) != 0)
      return fail_errno("setsockopt(IP_PKTINFO)");
  } else {
    if (setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one) != 0)
      return fail_errno("setsockopt(IPV6_RECVPKTINFO)");
    // A dual-stack socket also gets IPv4 packets: ask for their packet info too.
    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
  }
  return {};
}

Result<SocketAddress> local_address(int fd) {
  SocketAddress a;
  a.length = sizeof a.storage;
  if (getsockname(fd, a.sa(), &a.length) != 0) return fail_errno("getsockname");
  return a;
}

int socket_error(int fd) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

uint64_t raise_fd_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  return rl.rlim_cur;
}

}  // namespace weft::net
