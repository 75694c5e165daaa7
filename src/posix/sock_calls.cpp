// socket/bind/listen/accept/connect/close/shutdown, names, options, fcntl/ioctl and dup for weft
// sockets; every other descriptor goes to the C library untouched. Where a TCP or UDP socket goes
// is decided when it is bound or connected (socket() cannot know): loopback, and addresses the
// stack does not own or route, go to the kernel (the socket is swapped for a kernel one on the same
// descriptor number); the stack's address, INADDR_ANY and what it routes stay on weft.
#include "posix/sock_calls.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "posix/real_calls.hpp"
#include "posix/runtime.hpp"

namespace weft::posix {
namespace tcp = stack::tcp;

namespace {

using Lock = std::unique_lock<std::mutex>;

int px_fail(int e) {
  errno = e;
  return -1;
}

// A call that needs the stack in a process that has none: one log line per call, and `e`.
int no_stack(const char* call, int e) {
  log_once(std::string("nostack-") + call,
           std::string(call) + ": " + Runtime::why() + " (" + std::strerror(e) + ")");
  return px_fail(e);
}

bool loopback(uint32_t ip) { return (ip >> 24) == 127; }

std::string ip_str(uint32_t ip) {
  return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 255) + "." +
         std::to_string((ip >> 8) & 255) + "." + std::to_string(ip & 255);
}

// Under the lock: `fd`, a kernel dup of one of `s`'s descriptors, names `s` too. Returns `fd`, or
// -1 (EMFILE) past the table, where the layer could not find the socket by it.
int name_sock(Sock* s, int fd) {
  if (fd < 0) return fd;
  if (fd >= kMaxFd) {
    (void)real().close(fd);
    return px_fail(EMFILE);
  }
  s->fds.push_back(fd);
  g_socks[fd].store(s, std::memory_order_release);
  return fd;
}

// Under `g`: a TCP connect under way on `fd`. Its outcome once known (0, or the error, reported
// once); otherwise a non-blocking socket gets `pending` and a blocking one waits for the outcome.
int finish_connect(Lock& g, int fd, Sock* s, Runtime* rt, int pending) {
  int64_t deadline = 0;
  for (;;) {
    if (const stack::SockErr e = rt->sk().error(s->id); e != stack::SockErr::again) {
      if (s->connect_reported) return px_fail(ECONNABORTED);
      s->connect_reported = true;
      return px_fail(to_errno(e));
    }
    const tcp::Connection* c = rt->sk().connection(s->id);
    if (c != nullptr && c->connected()) {
      s->st = Sock::St::connected;
      s->connect_reported = true;
      return 0;
    }
    if (s->nonblock) return px_fail(pending);
    const int64_t timeo = s->sndtimeo_ns;
    g.unlock();
    // SO_SNDTIMEO passed: the handshake goes on, as the kernel's connect() says (EINPROGRESS).
    if (const Wait w = wait_sock(fd, POLLOUT, timeo, deadline); w != Wait::again)
      return w == Wait::timed_out ? px_fail(EINPROGRESS) : -1;
    g.lock();
    s = sock_of(fd);
    if (s == nullptr) return px_fail(EBADF);
    rt = Runtime::get();
    if (rt == nullptr) return no_stack("connect", ENOTSUP);
  }
}

}  // namespace

void fill_addr(uint32_t ip, uint16_t port, sockaddr* addr, socklen_t* len) {
  if (addr == nullptr || len == nullptr) return;
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(ip);
  in.sin_port = htons(port);
  std::memcpy(addr, &in, std::min<size_t>(*len, sizeof in));
  *len = sizeof in;
}

// Under the lock: `s` (fresh, no stack socket yet) becomes a kernel socket on the same descriptor,
// with the options the program set. The caller then repeats its call on the kernel.
int to_kernel(Sock* s) {
  const RealCalls& r = real();
  const int type = s->kind == Sock::Kind::tcp ? SOCK_STREAM : SOCK_DGRAM;
  const int k = r.socket(AF_INET, type | (s->nonblock ? SOCK_NONBLOCK : 0), 0);
  if (k < 0) return -1;
  const int one = 1;
  if (s->reuseaddr) (void)r.setsockopt(k, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (s->reuseport) (void)r.setsockopt(k, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  if (s->keepalive) (void)r.setsockopt(k, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  if (s->nodelay) (void)r.setsockopt(k, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (s->sndbuf > 0) (void)r.setsockopt(k, SOL_SOCKET, SO_SNDBUF, &s->sndbuf, sizeof s->sndbuf);
  if (s->rcvbuf > 0) (void)r.setsockopt(k, SOL_SOCKET, SO_RCVBUF, &s->rcvbuf, sizeof s->rcvbuf);
  if (s->linger_on) {
    const linger l{s->linger_on, s->linger_s};
    (void)r.setsockopt(k, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  }
  for (const auto& [opt, ns] :
       {std::pair{SO_RCVTIMEO, s->rcvtimeo_ns}, std::pair{SO_SNDTIMEO, s->sndtimeo_ns}})
    if (ns > 0) {
      const timeval tv{static_cast<time_t>(ns / 1'000'000'000),
                       static_cast<suseconds_t>(ns % 1'000'000'000 / 1000)};
      (void)r.setsockopt(k, SOL_SOCKET, opt, &tv, sizeof tv);
    }
  // Every descriptor that names the socket (dups included) becomes the kernel socket.
  for (size_t i = 0; i < s->fds.size(); ++i) {
    const int d = s->fds[i];
    const int fdflags = r.fcntl(d, F_GETFD);
    g_socks[d].store(nullptr, std::memory_order_release);
    if (r.dup3(k, d, (fdflags & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
      const int e = errno;
      g_socks[d].store(s, std::memory_order_release);
      s->fds.erase(s->fds.begin(), s->fds.begin() + static_cast<std::ptrdiff_t>(i));  // swapped already
      s->fd = s->fds.front();
      (void)r.close(k);
      return px_fail(e);
    }
  }
  const int fd = s->fd;
  (void)r.close(k);
  if (s->bound_port != 0) {  // bound to the stack's address before: bind the kernel socket the same way
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_port = htons(s->bound_port);
    (void)r.bind(fd, reinterpret_cast<sockaddr*>(&in), sizeof in);
  }
  if (Runtime* rt = Runtime::get()) rt->forget(*s);
  delete s;
  return 0;
}

}  // namespace weft::posix

using namespace weft;
using namespace weft::posix;
namespace tcp = weft::stack::tcp;
namespace wire = weft::stack::wire;

extern "C" {

int weft_px_socket(int domain, int type, int protocol) {
  if (domain == AF_INET6) {
    log_once("socket-inet6", "socket(AF_INET6): IPv6 is not supported on weft's stack (EAFNOSUPPORT)");
    return px_fail(EAFNOSUPPORT);
  }
  if (domain != AF_INET) return real().socket(domain, type, protocol);
  const int base = type & 0xf;
  const bool nonblock = (type & SOCK_NONBLOCK) != 0, cloexec = (type & SOCK_CLOEXEC) != 0;
  if (base == SOCK_STREAM && (protocol == 0 || protocol == IPPROTO_TCP))
    return new_sock_fd(Sock::Kind::tcp, nonblock, cloexec);
  if (base == SOCK_DGRAM && (protocol == 0 || protocol == IPPROTO_UDP))
    return new_sock_fd(Sock::Kind::udp, nonblock, cloexec);
  if (base == SOCK_RAW) {
    log_once("socket-raw",
             "socket(AF_INET, SOCK_RAW): raw sockets are not supported on weft's stack (ESOCKTNOSUPPORT)");
    return px_fail(ESOCKTNOSUPPORT);
  }
  log_once("socket-proto-" + std::to_string(base) + "-" + std::to_string(protocol),
           "socket(AF_INET, type " + std::to_string(base) + ", protocol " + std::to_string(protocol) +
               "): only TCP and UDP are supported on weft's stack (SCTP, ICMP and others are not: "
               "EPROTONOSUPPORT)");
  return px_fail(EPROTONOSUPPORT);
}

int weft_px_bind(int fd, const void* addr, socklen_t len) {
  if (sock_of(fd) == nullptr) return real().bind(fd, static_cast<const sockaddr*>(addr), len);
  Lock g(layer_mutex());
  Sock* s = sock_of(fd);
  if (s == nullptr) return px_fail(EBADF);
  if (addr == nullptr || len < sizeof(sockaddr_in)) return px_fail(EINVAL);
  sockaddr_in in;
  std::memcpy(&in, addr, sizeof in);
  if (in.sin_family != AF_INET) return px_fail(EAFNOSUPPORT);
  if (s->st != Sock::St::fresh || s->id != 0) return px_fail(EINVAL);
  const uint32_t ip = ntohl(in.sin_addr.s_addr);
  const uint16_t port = ntohs(in.sin_port);
  Runtime* rt = Runtime::get();
  if (loopback(ip) || (ip != 0 && (rt == nullptr || ip != rt->ip()))) {
    if (verbose() || !loopback(ip))
      log_once("bind-kernel-" + ip_str(ip),
               "bind to " + ip_str(ip) + ": not the stack's address: the kernel carries it");
    if (to_kernel(s) < 0) return -1;
    g.unlock();
    return real().bind(fd, static_cast<const sockaddr*>(addr), len);
  }
  if (rt == nullptr) return no_stack("bind", EADDRNOTAVAIL);
  if (s->kind == Sock::Kind::tcp) {
    if (port != 0 && rt->tcp_port_taken(port)) return px_fail(EADDRINUSE);
    s->bound_ip = ip;
    s->bound_port = port;
    if (port != 0) rt->note_port(port, true);
    s->st = Sock::St::bound;
    return 0;
  }
  auto id = rt->sk().udp_bind(port);
  if (!id) return px_fail(to_errno(id.error()));
  rt->adopt(*s, *id);
  s->bound_ip = ip;
  s->bound_port = rt->sk().local_port(*id);
  s->st = Sock::St::bound;
  return 0;
}

int weft_px_listen(int fd, int backlog) {
  if (sock_of(fd) == nullptr) return real().listen(fd, backlog);
  Lock g(layer_mutex());
  Sock* s = sock_of(fd);
  if (s == nullptr) return px_fail(EBADF);
  Runtime* rt = Runtime::get();
  if (rt == nullptr) return no_stack("listen", EADDRNOTAVAIL);
  if (s->kind != Sock::Kind::tcp) return px_fail(EOPNOTSUPP);
  if (s->st == Sock::St::listening) return 0;
  if (s->st != Sock::St::fresh && s->st != Sock::St::bound) return px_fail(EINVAL);
  const size_t bl = backlog <= 0 ? 1 : std::min(backlog, 4096);
  uint16_t port = s->bound_port;
  stack::SockResult<stack::SockId> id = std::unexpected(stack::SockErr::no_ports);
  if (port != 0) {
    id = rt->sk().listen(port, bl);
  } else {  // listen() without bind(): an ephemeral port, as the kernel picks one
    static uint16_t next = 40000;
    for (int tries = 0; tries < 20000 && !id; ++tries) {
      port = next;
      next = next >= 48999 ? 40000 : next + 1;
      if (!rt->tcp_port_taken(port)) id = rt->sk().listen(port, bl);
    }
    if (id) rt->note_port(port, true);
  }
  if (!id) return px_fail(to_errno(id.error()));
  rt->adopt(*s, *id);
  s->bound_port = port;
  s->st = Sock::St::listening;
  rt->refresh(*s);
  return 0;
}

int weft_px_accept4(int fd, void* addr, socklen_t* len, int flags, int has_flags) {
  if (sock_of(fd) == nullptr)
    return has_flags ? real().accept4(fd, static_cast<sockaddr*>(addr), len, flags)
                     : real().accept(fd, static_cast<sockaddr*>(addr), len);
  int64_t deadline = 0;  // SO_RCVTIMEO's, set at the first wait
  for (;;) {
    Lock g(layer_mutex());
    Sock* s = sock_of(fd);
    if (s == nullptr) return px_fail(EBADF);
    Runtime* rt = Runtime::get();
    if (rt == nullptr) return no_stack("accept", ENOTSUP);
    if (s->st != Sock::St::listening) return px_fail(EINVAL);
    auto id = rt->sk().accept(s->id);
    if (id) {
      // Its eventfd starts readable when the connection already has news (the request, a FIN):
      // refresh() below then finds it set and writes nothing.
      const tcp::Connection* nc = rt->sk().connection(*id);
      const bool ready = (rt->sk().state(*id) &
                          (stack::sockev::readable | stack::sockev::hangup | stack::sockev::error)) != 0 ||
                         (nc != nullptr && nc->peer_closed());
      const int nfd =
          new_sock_fd(Sock::Kind::tcp, (flags & SOCK_NONBLOCK) != 0, (flags & SOCK_CLOEXEC) != 0, ready);
      if (nfd < 0) {
        const int e = errno;
        rt->sk().abort(*id);
        return px_fail(e);
      }
      Sock* n = sock_of(nfd);
      rt->adopt(*n, *id);
      n->st = Sock::St::connected;
      n->bound_port = 0;
      n->nodelay = s->nodelay;  // as Linux: accepted sockets inherit the listener's options
      n->keepalive = s->keepalive;
      n->linger_on = s->linger_on;
      n->linger_s = s->linger_s;
      n->rcvtimeo_ns = s->rcvtimeo_ns;
      n->sndtimeo_ns = s->sndtimeo_ns;
      n->keepidle = s->keepidle;
      n->keepintvl = s->keepintvl;
      n->keepcnt = s->keepcnt;
      (void)rt->sk().set_nagle(*id, !n->nodelay);
      if (n->keepalive) apply_keepalive(rt, *n);
      const tcp::Connection* c = rt->sk().connection(*id);
      fill_addr(c->tuple().remote_ip.v, c->tuple().remote_port, static_cast<sockaddr*>(addr), len);
      rt->refresh(*s);
      rt->refresh(*n);
      rt->after_call();
      return nfd;
    }
    if (id.error() != stack::SockErr::again) return px_fail(to_errno(id.error()));
    if (s->nonblock) return px_fail(EAGAIN);
    const int64_t timeo = s->rcvtimeo_ns;
    g.unlock();
    if (const Wait w = wait_sock(fd, POLLIN, timeo, deadline); w != Wait::again)
      return w == Wait::timed_out ? px_fail(EAGAIN) : -1;
  }
}

int weft_px_connect(int fd, const void* addr, socklen_t len) {
  if (sock_of(fd) == nullptr) return real().connect(fd, static_cast<const sockaddr*>(addr), len);
  Lock g(layer_mutex());
  Sock* s = sock_of(fd);
  if (s == nullptr) return px_fail(EBADF);
  if (addr == nullptr || len < sizeof(sa_family_t)) return px_fail(EINVAL);
  sockaddr_in in{};
  std::memcpy(&in, addr, std::min<size_t>(len, sizeof in));
  Runtime* rt = Runtime::get();
  if (in.sin_family == AF_UNSPEC && s->kind == Sock::Kind::udp) {  // dissolves a UDP association
    if (rt != nullptr && s->id != 0) (void)rt->sk().udp_connect(s->id, wire::Ipv4Addr{}, 0);
    s->udp_peer_ip = 0;
    s->udp_peer_port = 0;
    return 0;
  }
  if (in.sin_family != AF_INET || len < sizeof in) return px_fail(EAFNOSUPPORT);
  const uint32_t dst = ntohl(in.sin_addr.s_addr);
  const uint16_t port = ntohs(in.sin_port);
  const bool fresh = s->id == 0 && s->bound_port == 0;
  if (fresh && (loopback(dst) || (rt != nullptr && !rt->stack_routes(dst)))) {
    if (!loopback(dst))
      log_once("connect-kernel-" + ip_str(dst),
               "connect to " + ip_str(dst) +
                   ": not reachable through weft's stack (no route): the kernel carries it");
    if (to_kernel(s) < 0) return -1;
    g.unlock();
    return real().connect(fd, static_cast<const sockaddr*>(addr), len);
  }
  if (rt == nullptr) return no_stack("connect", ENETUNREACH);
  if (s->kind == Sock::Kind::udp) {
    if (s->id == 0) {
      auto id = rt->sk().udp_bind(0);
      if (!id) return px_fail(to_errno(id.error()));
      rt->adopt(*s, *id);
      s->bound_port = rt->sk().local_port(*id);
    }
    wire::Ipv4Addr a;
    a.v = dst;
    if (auto r = rt->sk().udp_connect(s->id, a, port); !r) return px_fail(to_errno(r.error()));
    s->udp_peer_ip = dst;
    s->udp_peer_port = port;
    s->st = Sock::St::connected;
    return 0;
  }
  if (s->st == Sock::St::connected) return px_fail(EISCONN);
  // Asked again while connecting, as hiredis does once poll() says writable: the outcome if there
  // is one (0 once established, the error once failed), EALREADY while the handshake goes on, and a
  // blocking socket waits for it. The kernel's inet_stream_connect answers the same way.
  if (s->st == Sock::St::connecting) return finish_connect(g, fd, s, rt, EALREADY);
  if (s->st == Sock::St::listening) return px_fail(EINVAL);
  if (s->bound_port != 0) {
    log_once("connect-bound", "connect: the local port bind() chose (" + std::to_string(s->bound_port) +
                                  ") is not kept: weft's stack gives the connection an ephemeral port");
    rt->note_port(s->bound_port, false);
    s->bound_port = 0;
  }
  wire::Ipv4Addr a;
  a.v = dst;
  auto id = rt->sk().connect(a, port);
  if (!id) return px_fail(to_errno(id.error()));
  rt->adopt(*s, *id);
  s->st = Sock::St::connecting;
  (void)rt->sk().set_nagle(*id, !s->nodelay);
  if (s->keepalive) apply_keepalive(rt, *s);  // armed once the handshake is done
  rt->after_call();
  rt->refresh(*s);
  return finish_connect(g, fd, s, rt, EINPROGRESS);
}

int weft_px_close(int fd) {
  close_epoll_shadow(fd);
  if (sock_of(fd) == nullptr) return real().close(fd);
  {
    Lock g(layer_mutex());
    if (Sock* s = sock_of(fd)) drop_sock_fd(s, fd);
  }
  return real().close(fd);
}

int weft_px_shutdown(int fd, int how) {
  if (sock_of(fd) == nullptr) return real().shutdown(fd, how);
  Lock g(layer_mutex());
  Sock* s = sock_of(fd);
  if (s == nullptr) return px_fail(EBADF);
  Runtime* rt = Runtime::get();
  if (rt == nullptr) return no_stack("shutdown", ENOTSUP);
  if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) return px_fail(EINVAL);
  if (s->kind != Sock::Kind::tcp || s->id == 0 || s->st == Sock::St::listening) return px_fail(ENOTCONN);
  if (how != SHUT_WR) s->rd_shut = true;
  if (how != SHUT_RD && !s->wr_shut) {
    (void)rt->sk().shutdown(s->id);
    s->wr_shut = true;
  }
  rt->after_call();
  rt->refresh(*s, true);
  return 0;
}

int weft_px_getsockname(int fd, void* addr, socklen_t* len) {
  if (sock_of(fd) == nullptr) return real().getsockname(fd, static_cast<sockaddr*>(addr), len);
  Lock g(layer_mutex());
  Sock* s = sock_of(fd);
  if (s == nullptr) return px_fail(EBADF);
  if (addr == nullptr || len == nullptr) return px_fail(EFAULT);
  Runtime* rt = Runtime::get();
  uint32_t ip = s->bound_ip;
  uint16_t port = s->bound_port;
  if (rt != nullptr && s->id != 0) {
    port = rt->sk().local_port(s->id);
    if (s->st == Sock::St::connected || s->st == Sock::St::connecting) ip = rt->ip();
  }
  fill_addr(ip, port, static_cast<sockaddr*>(addr), len);
  return 0;
}

int weft_px_getpeername(int fd, void* addr, socklen_t* len) {
  if (sock_of(fd) == nullptr) return real().getpeername(fd, static_cast<sockaddr*>(addr), len);
  Lock g(layer_mutex());
  Sock* s = sock_of(fd);
  if (s == nullptr) return px_fail(EBADF);
  if (addr == nullptr || len == nullptr) return px_fail(EFAULT);
  Runtime* rt = Runtime::get();
  if (s->kind == Sock::Kind::udp) {
    if (s->udp_peer_port == 0) return px_fail(ENOTCONN);
    fill_addr(s->udp_peer_ip, s->udp_peer_port, static_cast<sockaddr*>(addr), len);
    return 0;
  }
  if (rt == nullptr || s->id == 0 || s->st != Sock::St::connected) {
    if (rt != nullptr && s->st == Sock::St::connecting) {
      const tcp::Connection* c = rt->sk().connection(s->id);
      if (c != nullptr && c->connected()) s->st = Sock::St::connected;
    }
    if (rt == nullptr || s->st != Sock::St::connected) return px_fail(ENOTCONN);
  }
  const tcp::Connection* c = rt->sk().connection(s->id);
  if (c == nullptr) return px_fail(ENOTCONN);
  fill_addr(c->tuple().remote_ip.v, c->tuple().remote_port, static_cast<sockaddr*>(addr), len);
  return 0;
}

int weft_px_fcntl(int fd, int cmd, uintptr_t arg) {
  if (sock_of(fd) == nullptr) return real().fcntl(fd, cmd, arg);
  Lock g(layer_mutex());
  Sock* s = sock_of(fd);
  if (s == nullptr) return px_fail(EBADF);
  switch (cmd) {
    case F_GETFL:
      return O_RDWR | (s->nonblock ? O_NONBLOCK : 0);
    case F_SETFL:
      s->nonblock = (static_cast<int>(arg) & O_NONBLOCK) != 0;
      return 0;
    case F_GETFD:
    case F_SETFD:
      return real().fcntl(fd, cmd, arg);
    case F_DUPFD:
    case F_DUPFD_CLOEXEC: {
      return name_sock(s, real().fcntl(fd, cmd, arg));
    }
    default:
      log_once("fcntl-" + std::to_string(cmd), "fcntl(cmd " + std::to_string(cmd) +
                                                   ") on a weft socket is not supported (signal-driven I/O, "
                                                   "locks, pipe sizes): EOPNOTSUPP");
      return px_fail(EOPNOTSUPP);
  }
}

int weft_px_ioctl(int fd, unsigned long req, void* arg) {
  if (sock_of(fd) == nullptr) return real().ioctl(fd, req, arg);
  Lock g(layer_mutex());
  Sock* s = sock_of(fd);
  if (s == nullptr) return px_fail(EBADF);
  Runtime* rt = Runtime::get();
  switch (req) {
    case FIONBIO:
      if (arg == nullptr) return px_fail(EFAULT);
      s->nonblock = *static_cast<int*>(arg) != 0;
      return 0;
    case FIONREAD: {
      if (arg == nullptr) return px_fail(EFAULT);
      int n = 0;
      if (rt != nullptr && s->id != 0 && s->kind == Sock::Kind::tcp) {
        if (const tcp::Connection* c = rt->sk().connection(s->id)) n = static_cast<int>(c->readable());
      } else if (rt != nullptr && s->id != 0 && (rt->sk().state(s->id) & stack::sockev::readable)) {
        n = 1;  // a UDP datagram waits (its size is not known without reading it)
        log_once("fionread-udp",
                 "ioctl(FIONREAD) on a UDP weft socket says 1 when a datagram waits, not its size");
      }
      *static_cast<int*>(arg) = n;
      return 0;
    }
    case SIOCOUTQ: {
      if (arg == nullptr) return px_fail(EFAULT);
      int n = 0;
      if (rt != nullptr && s->id != 0 && s->kind == Sock::Kind::tcp)
        if (const tcp::Connection* c = rt->sk().connection(s->id)) n = static_cast<int>(c->bytes_in_flight());
      *static_cast<int*>(arg) = n;
      return 0;
    }
    default:
      log_once("ioctl-" + std::to_string(req),
               "ioctl(" + std::to_string(req) + ") on a weft socket is not supported (ENOTTY)");
      return px_fail(ENOTTY);
  }
}

// splice() moves pages between kernel buffers; a weft socket's bytes live in the stack's rings,
// where no splice can reach. Refused with the errno the kernel gives a descriptor it cannot
// splice, and said once.
ssize_t weft_px_splice(int in, void* off_in, int out, void* off_out, size_t len, unsigned flags) {
  if (sock_of(in) != nullptr || sock_of(out) != nullptr) {
    log_once("splice",
             "splice() with a weft socket is not supported: its bytes are in weft's rings, not in a "
             "kernel socket buffer (EINVAL; read and write instead)");
    return px_fail(EINVAL);
  }
  return ::syscall(SYS_splice, in, off_in, out, off_out, len, flags);
}

int weft_px_dup(int fd) {
  if (sock_of(fd) == nullptr) return real().dup(fd);
  Lock g(layer_mutex());
  Sock* s = sock_of(fd);
  if (s == nullptr) return px_fail(EBADF);
  return name_sock(s, real().dup(fd));  // the same eventfd under a new number: the same news
}

int weft_px_dup3(int fd, int to, int flags, int is_dup3) {
  if (fd == to) return is_dup3 ? real().dup3(fd, to, flags) : real().dup2(fd, to);  // EINVAL / a check
  Lock g(layer_mutex());
  Sock* s = sock_of(fd);
  if (real().fcntl(fd, F_GETFD) < 0) return -1;  // EBADF, and `to` stays open, as the kernel's
  // The kernel closes `to` first: so does the layer, for the weft socket it named.
  if (Sock* old = sock_of(to)) drop_sock_fd(old, to);
  const int r = is_dup3 ? real().dup3(fd, to, flags) : real().dup2(fd, to);
  return r >= 0 && s != nullptr ? name_sock(s, r) : r;
}

}  // extern "C"
