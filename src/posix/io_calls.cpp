// read/write/readv/writev/send/recv/sendto/recvfrom/sendmsg/recvmsg/sendmmsg/recvmmsg and sendfile
// on weft sockets: copies between the program's buffers and the connection's rings under the
// lock; a blocking call waits on the socket's descriptor without the lock. sendfile reads the
// file straight into the send ring (send_reserve/send_commit): one copy, as the kernel's.
#include <netinet/in.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "posix/real_calls.hpp"
#include "posix/runtime.hpp"
#include "posix/sock_calls.hpp"

using namespace weft;
using namespace weft::posix;
namespace tcp = weft::stack::tcp;
namespace wire = weft::stack::wire;

namespace {

using Lock = std::unique_lock<std::mutex>;

ssize_t px_fail(int e) {
  errno = e;
  return -1;
}

ssize_t no_stack(const char* call) {
  log_once(std::string("nostack-") + call,
           std::string(call) + " on a weft socket: " + Runtime::why() + " (ENOTSUP)");
  return px_fail(ENOTSUP);
}

ssize_t pipe_error(int flags) {
  if (!(flags & MSG_NOSIGNAL)) ::raise(SIGPIPE);  // as the kernel: EPIPE comes with SIGPIPE
  return px_fail(EPIPE);
}

size_t iov_total(const iovec* iov, int n) {
  size_t t = 0;
  for (int i = 0; i < n; ++i) t += iov[i].iov_len;
  return t;
}

// Under the lock: a TCP socket whose connect completed since the program last looked.
void settle(Runtime* rt, Sock* s) {
  if (s->st != Sock::St::connecting) return;
  if (const tcp::Connection* c = rt->sk().connection(s->id); c != nullptr && c->connected())
    s->st = Sock::St::connected;
}

// UDP: binds an unbound socket to an ephemeral port (the kernel's autobind).
bool udp_autobind(Runtime* rt, Sock* s) {
  if (s->id != 0) return true;
  auto id = rt->sk().udp_bind(0);
  if (!id) {
    errno = to_errno(id.error());
    return false;
  }
  rt->adopt(*s, *id);
  s->bound_port = rt->sk().local_port(*id);
  s->st = Sock::St::bound;
  return true;
}

}  // namespace

namespace weft::posix {

// Receives into `iov` from the weft socket `fd`; `from` (UDP) gets the sender.
ssize_t weft_recv(int fd, const iovec* iov, int iovcnt, int flags, sockaddr* from, socklen_t* fromlen,
                  int* msg_flags) {
  if (flags & MSG_OOB) {
    log_once("msg-oob", "recv(MSG_OOB): urgent data is not supported on weft's stack (EOPNOTSUPP)");
    return px_fail(EOPNOTSUPP);
  }
  const size_t want = iov_total(iov, iovcnt);
  size_t total = 0;
  int64_t deadline = 0;  // SO_RCVTIMEO's / SO_SNDTIMEO's, set at the first wait
  for (;;) {
    Lock g(layer_mutex());
    Sock* s = sock_of(fd);
    if (s == nullptr) return px_fail(EBADF);
    Runtime* rt = Runtime::get();
    if (rt == nullptr) return no_stack("recv");
    const bool nonblock = s->nonblock || (flags & MSG_DONTWAIT);
    if (s->kind == Sock::Kind::udp) {
      if (!udp_autobind(rt, s)) return -1;
      thread_local std::vector<uint8_t> scratch(65536);
      const bool direct = iovcnt == 1;
      wire::MutBytes out = direct ? wire::MutBytes(static_cast<uint8_t*>(iov[0].iov_base), iov[0].iov_len)
                                  : wire::MutBytes(scratch.data(), scratch.size());
      auto d = rt->sk().recvfrom(s->id, out, (flags & MSG_PEEK) != 0);
      if (d) {
        size_t n = std::min(d->len, want);
        if (!direct) {
          size_t off = 0;
          for (int i = 0; i < iovcnt && off < n; ++i) {
            const size_t k = std::min(iov[i].iov_len, n - off);
            std::memcpy(iov[i].iov_base, scratch.data() + off, k);
            off += k;
          }
        }
        fill_addr(d->src.v, d->src_port, from, fromlen);
        if (msg_flags != nullptr && d->len > want) *msg_flags |= MSG_TRUNC;
        rt->refresh(*s);
        return static_cast<ssize_t>((flags & MSG_TRUNC) ? d->len : n);
      }
      if (d.error() != stack::SockErr::again) return px_fail(to_errno(d.error()));
    } else {
      if (s->id == 0 || s->st == Sock::St::listening) return px_fail(ENOTCONN);
      rt->catch_up();
      settle(rt, s);
      if (s->rd_shut) return 0;
      if (flags & MSG_PEEK) {
        auto v = rt->sk().recv_view(s->id);
        if (v) {
          size_t off = 0;
          for (wire::Bytes piece : {v->first, v->second})
            for (size_t p = 0; p < piece.size() && off < want;) {
              // which iovec holds offset `off`
              size_t base = 0;
              int i = 0;
              while (base + iov[i].iov_len <= off) base += iov[i++].iov_len;
              const size_t k = std::min({piece.size() - p, iov[i].iov_len - (off - base), want - off});
              std::memcpy(static_cast<uint8_t*>(iov[i].iov_base) + (off - base), piece.data() + p, k);
              p += k;
              off += k;
            }
          return static_cast<ssize_t>(off);
        }
        if (v.error() != stack::SockErr::again) return px_fail(to_errno(v.error()));
      } else {
        bool eof = false;
        size_t before = total;
        // Continue where a MSG_WAITALL wait left off.
        size_t skip = total;
        for (int i = 0; i < iovcnt; ++i) {
          if (skip >= iov[i].iov_len) {
            skip -= iov[i].iov_len;
            continue;
          }
          wire::MutBytes piece(static_cast<uint8_t*>(iov[i].iov_base) + skip, iov[i].iov_len - skip);
          skip = 0;
          auto r = rt->sk().recv(s->id, piece);
          if (!r) {
            if (r.error() != stack::SockErr::again && total == 0) return px_fail(to_errno(r.error()));
            break;
          }
          if (*r == 0) {
            eof = true;
            break;
          }
          total += *r;
          if (*r < piece.size()) break;
        }
        if (total > before) {
          // Emptied, the eventfd stays set: a program reading to EAGAIN would otherwise clear it
          // on one read and have it set again by the next read's catch_up (two syscalls a read);
          // the next wait that finds nothing for the socket clears it.
          rt->refresh(*s, false, false);
          rt->after_call();  // the window update the read made
        }
        if (eof || total == want || (total > 0 && !(flags & MSG_WAITALL))) return static_cast<ssize_t>(total);
        if (total > 0 && nonblock) return static_cast<ssize_t>(total);
      }
    }
    if (nonblock) return px_fail(EAGAIN);
    const int64_t timeo = s->rcvtimeo_ns;
    g.unlock();
    if (const Wait w = wait_sock(fd, POLLIN, timeo, deadline); w != Wait::again)
      return total > 0 ? static_cast<ssize_t>(total) : w == Wait::timed_out ? px_fail(EAGAIN) : -1;
  }
}

// Sends `iov` on the weft socket `fd` (to `to` for an unconnected UDP socket).
ssize_t weft_send(int fd, const iovec* iov, int iovcnt, int flags, const sockaddr* to, socklen_t tolen) {
  if (flags & MSG_OOB) {
    log_once("msg-oob-send", "send(MSG_OOB): urgent data is not supported on weft's stack (EOPNOTSUPP)");
    return px_fail(EOPNOTSUPP);
  }
  const size_t want = iov_total(iov, iovcnt);
  size_t total = 0;
  int64_t deadline = 0;  // SO_RCVTIMEO's / SO_SNDTIMEO's, set at the first wait
  for (;;) {
    Lock g(layer_mutex());
    Sock* s = sock_of(fd);
    if (s == nullptr) return px_fail(EBADF);
    Runtime* rt = Runtime::get();
    if (s->kind == Sock::Kind::udp) {
      uint32_t dst = s->udp_peer_ip;
      uint16_t port = s->udp_peer_port;
      if (to != nullptr && tolen >= sizeof(sockaddr_in)) {
        sockaddr_in in;
        std::memcpy(&in, to, sizeof in);
        if (in.sin_family != AF_INET) return px_fail(EAFNOSUPPORT);
        dst = ntohl(in.sin_addr.s_addr);
        port = ntohs(in.sin_port);
      }
      if (port == 0) return px_fail(EDESTADDRREQ);
      const bool ours = rt != nullptr && (dst >> 24) != 127 && rt->stack_routes(dst);
      if (!ours && s->id == 0) {  // a fresh socket to loopback or off the stack: the kernel's
        if (to_kernel(s) < 0) return -1;
        g.unlock();
        msghdr m{};
        m.msg_name = const_cast<sockaddr*>(to);
        m.msg_namelen = to != nullptr ? tolen : 0;
        m.msg_iov = const_cast<iovec*>(iov);
        m.msg_iovlen = static_cast<size_t>(iovcnt);
        return real().sendmsg(fd, &m, flags);
      }
      if (rt == nullptr) return no_stack("sendto");
      if (!ours) {
        log_once("udp-offstack",
                 "sendto: a UDP socket on weft's stack cannot reach this address (ENETUNREACH)");
        return px_fail(ENETUNREACH);
      }
      if (!udp_autobind(rt, s)) return -1;
      thread_local std::vector<uint8_t> scratch;
      wire::Bytes payload;
      if (iovcnt == 1) {
        payload = wire::Bytes(static_cast<const uint8_t*>(iov[0].iov_base), iov[0].iov_len);
      } else {
        scratch.clear();
        for (int i = 0; i < iovcnt; ++i) {
          const auto* p = static_cast<const uint8_t*>(iov[i].iov_base);
          scratch.insert(scratch.end(), p, p + iov[i].iov_len);
        }
        payload = wire::Bytes(scratch.data(), scratch.size());
      }
      wire::Ipv4Addr a;
      a.v = dst;
      auto r = rt->sk().sendto(s->id, a, port, payload);
      rt->after_call();
      if (!r) return px_fail(to_errno(r.error()));
      return static_cast<ssize_t>(*r);
    }
    if (rt == nullptr) return no_stack("send");
    if (s->id == 0 || s->st == Sock::St::listening) return px_fail(ENOTCONN);
    rt->catch_up();
    settle(rt, s);
    const bool nonblock = s->nonblock || (flags & MSG_DONTWAIT);
    if (s->st == Sock::St::connecting) {
      const stack::SockErr e = rt->sk().error(s->id);
      if (e != stack::SockErr::again) return px_fail(to_errno(e));
      if (nonblock) return px_fail(EAGAIN);
    } else {
      if (s->wr_shut) return pipe_error(flags);
      size_t skip = total;
      for (int i = 0; i < iovcnt; ++i) {
        if (skip >= iov[i].iov_len) {
          skip -= iov[i].iov_len;
          continue;
        }
        wire::Bytes piece(static_cast<const uint8_t*>(iov[i].iov_base) + skip, iov[i].iov_len - skip);
        skip = 0;
        auto r = rt->sk().send(s->id, piece);
        if (!r) {
          if (r.error() == stack::SockErr::again) break;
          rt->after_call();
          if (total > 0) return static_cast<ssize_t>(total);
          if (r.error() == stack::SockErr::shut_down) return pipe_error(flags);
          return px_fail(to_errno(r.error()));
        }
        total += *r;
        if (*r < piece.size()) break;
      }
      rt->after_call();
      if (total == want || (total > 0 && nonblock)) {
        rt->refresh(*s);
        return static_cast<ssize_t>(total);
      }
      if (nonblock) {
        rt->refresh(*s);
        return px_fail(EAGAIN);
      }
    }
    const int64_t timeo = s->sndtimeo_ns;
    g.unlock();
    if (const Wait w = wait_sock(fd, POLLOUT, timeo, deadline); w != Wait::again)
      return total > 0 ? static_cast<ssize_t>(total) : w == Wait::timed_out ? px_fail(EAGAIN) : -1;
  }
}

}  // namespace weft::posix

extern "C" {

ssize_t weft_px_read(int fd, void* buf, size_t n) {
  if (sock_of(fd) == nullptr) return real().read(fd, buf, n);
  const iovec v{buf, n};
  return weft_recv(fd, &v, 1, 0, nullptr, nullptr, nullptr);
}

ssize_t weft_px_write(int fd, const void* buf, size_t n) {
  if (sock_of(fd) == nullptr) return real().write(fd, buf, n);
  const iovec v{const_cast<void*>(buf), n};
  return weft_send(fd, &v, 1, 0, nullptr, 0);
}

ssize_t weft_px_readv(int fd, const void* iov, int n) {
  if (sock_of(fd) == nullptr) return real().readv(fd, static_cast<const iovec*>(iov), n);
  return weft_recv(fd, static_cast<const iovec*>(iov), n, 0, nullptr, nullptr, nullptr);
}

ssize_t weft_px_writev(int fd, const void* iov, int n) {
  if (sock_of(fd) == nullptr) return real().writev(fd, static_cast<const iovec*>(iov), n);
  return weft_send(fd, static_cast<const iovec*>(iov), n, 0, nullptr, 0);
}

ssize_t weft_px_send(int fd, const void* buf, size_t n, int flags) {
  if (sock_of(fd) == nullptr) return real().send(fd, buf, n, flags);
  const iovec v{const_cast<void*>(buf), n};
  return weft_send(fd, &v, 1, flags, nullptr, 0);
}

ssize_t weft_px_recv(int fd, void* buf, size_t n, int flags) {
  if (sock_of(fd) == nullptr) return real().recv(fd, buf, n, flags);
  const iovec v{buf, n};
  return weft_recv(fd, &v, 1, flags, nullptr, nullptr, nullptr);
}

ssize_t weft_px_sendto(int fd, const void* buf, size_t n, int flags, const void* to, socklen_t tolen) {
  if (sock_of(fd) == nullptr)
    return real().sendto(fd, buf, n, flags, static_cast<const sockaddr*>(to), tolen);
  const iovec v{const_cast<void*>(buf), n};
  return weft_send(fd, &v, 1, flags, static_cast<const sockaddr*>(to), tolen);
}

ssize_t weft_px_recvfrom(int fd, void* buf, size_t n, int flags, void* from, socklen_t* fromlen) {
  if (sock_of(fd) == nullptr)
    return real().recvfrom(fd, buf, n, flags, static_cast<sockaddr*>(from), fromlen);
  const iovec v{buf, n};
  return weft_recv(fd, &v, 1, flags, static_cast<sockaddr*>(from), fromlen, nullptr);
}

ssize_t weft_px_sendmsg(int fd, const void* msg, int flags) {
  if (sock_of(fd) == nullptr) return real().sendmsg(fd, static_cast<const msghdr*>(msg), flags);
  const auto* m = static_cast<const msghdr*>(msg);
  if (m->msg_controllen > 0)
    log_once("sendmsg-cmsg", "sendmsg: control messages on a weft socket are ignored");
  return weft_send(fd, m->msg_iov, static_cast<int>(m->msg_iovlen), flags,
                   static_cast<const sockaddr*>(m->msg_name), m->msg_namelen);
}

ssize_t weft_px_recvmsg(int fd, void* msg, int flags) {
  if (sock_of(fd) == nullptr) return real().recvmsg(fd, static_cast<msghdr*>(msg), flags);
  auto* m = static_cast<msghdr*>(msg);
  m->msg_flags = 0;
  socklen_t namelen = m->msg_namelen;
  const ssize_t r =
      weft_recv(fd, m->msg_iov, static_cast<int>(m->msg_iovlen), flags, static_cast<sockaddr*>(m->msg_name),
                m->msg_name != nullptr ? &namelen : nullptr, &m->msg_flags);
  if (m->msg_name != nullptr) m->msg_namelen = namelen;
  m->msg_controllen = 0;
  return r;
}

int weft_px_sendmmsg(int fd, void* vec, unsigned n, int flags) {
  if (sock_of(fd) == nullptr) return real().sendmmsg(fd, static_cast<mmsghdr*>(vec), n, flags);
  auto* v = static_cast<mmsghdr*>(vec);
  unsigned i = 0;
  for (; i < n; ++i) {
    const ssize_t r = weft_px_sendmsg(fd, &v[i].msg_hdr, flags);
    if (r < 0) return i > 0 ? static_cast<int>(i) : -1;
    v[i].msg_len = static_cast<unsigned>(r);
  }
  return static_cast<int>(i);
}

int weft_px_recvmmsg(int fd, void* vec, unsigned n, int flags, void* timeout) {
  if (sock_of(fd) == nullptr)
    return real().recvmmsg(fd, static_cast<mmsghdr*>(vec), n, flags, static_cast<timespec*>(timeout));
  auto* v = static_cast<mmsghdr*>(vec);
  unsigned i = 0;
  for (; i < n; ++i) {  // the first may wait; the rest only take what is there
    const ssize_t r = weft_px_recvmsg(fd, &v[i].msg_hdr, i == 0 ? flags : flags | MSG_DONTWAIT);
    if (r < 0) return i > 0 ? static_cast<int>(i) : -1;
    v[i].msg_len = static_cast<unsigned>(r);
  }
  return static_cast<int>(i);
}

// sendfile(out = a weft socket): the file's bytes are read straight into the send ring.
ssize_t weft_px_sendfile(int out, int in, off_t* offset, size_t count) {
  if (sock_of(out) == nullptr) return real().sendfile(out, in, offset, count);
  size_t total = 0;
  int64_t deadline = 0;  // SO_SNDTIMEO's, set at the first wait
  while (total < count) {
    Lock g(layer_mutex());
    Sock* s = sock_of(out);
    if (s == nullptr) return px_fail(EBADF);
    Runtime* rt = Runtime::get();
    if (rt == nullptr) return no_stack("sendfile");
    if (s->kind != Sock::Kind::tcp || s->id == 0 || s->st == Sock::St::listening) return px_fail(ENOTCONN);
    rt->catch_up();
    settle(rt, s);
    if (s->wr_shut) return total > 0 ? static_cast<ssize_t>(total) : pipe_error(0);
    auto r = rt->sk().send_reserve(s->id);
    if (r) {
      size_t placed = 0;
      bool end = false;
      for (wire::MutBytes piece : {r->first, r->second}) {
        size_t want = std::min(piece.size(), count - total - placed);
        size_t got = 0;
        while (got < want) {
          const ssize_t k = offset != nullptr ? ::pread(in, piece.data() + got, want - got,
                                                        *offset + static_cast<off_t>(placed + got))
                                              : real().read(in, piece.data() + got, want - got);
          if (k < 0) {
            if (errno == EINTR) continue;
            const int e = errno;
            if (placed + got > 0) break;
            (void)rt->sk().send_commit(s->id, 0);
            if (total > 0) return static_cast<ssize_t>(total);
            return px_fail(e);
          }
          if (k == 0) {
            end = true;
            break;
          }
          got += static_cast<size_t>(k);
        }
        placed += got;
        if (end || got < want || placed + total >= count) break;
      }
      const size_t took = rt->sk().send_commit(s->id, placed).value_or(0);
      total += took;
      if (offset != nullptr) *offset += static_cast<off_t>(took);
      rt->after_call();
      if (end || took == 0) break;
      continue;
    }
    if (r.error() != stack::SockErr::again) {
      if (total > 0) return static_cast<ssize_t>(total);
      if (r.error() == stack::SockErr::shut_down) return pipe_error(0);
      return px_fail(to_errno(r.error()));
    }
    if (s->nonblock) {
      rt->refresh(*s);
      if (total > 0) return static_cast<ssize_t>(total);
      return px_fail(EAGAIN);
    }
    const int64_t timeo = s->sndtimeo_ns;
    g.unlock();
    if (const Wait w = wait_sock(out, POLLOUT, timeo, deadline); w != Wait::again)
      return total > 0 ? static_cast<ssize_t>(total) : w == Wait::timed_out ? px_fail(EAGAIN) : -1;
  }
  return static_cast<ssize_t>(total);
}

}  // extern "C"
