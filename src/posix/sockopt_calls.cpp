// getsockopt/setsockopt on weft sockets. What the stack acts on: TCP_NODELAY (Nagle per
// connection), SO_LINGER with a zero timeout (close() resets), SO_RCVTIMEO/SO_SNDTIMEO (the layer's
// blocking calls' waits), SO_KEEPALIVE with TCP_KEEPIDLE/INTVL/CNT (the connection's probes),
// SO_ERROR, TCP_INFO and TCP_MAXSEG from the connection. What is recorded and reported back but not
// acted on (each says so once in the log): SO_SNDBUF/SO_RCVBUF (every connection has the rings
// `weft stack run --buffer` sets). SO_REUSEADDR and SO_REUSEPORT are recorded (the stack has no
// TIME-WAIT port conflicts to lift; a second listener on a port is refused either way). Anything
// else: ENOPROTOOPT and one log line.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/time.h>

#include <cerrno>
#include <cstring>

#include "posix/real_calls.hpp"
#include "posix/runtime.hpp"

using namespace weft;
using namespace weft::posix;
namespace tcp = weft::stack::tcp;

namespace {

using Lock = std::unique_lock<std::mutex>;

int px_fail(int e) {
  errno = e;
  return -1;
}

int put_int(int v, void* val, socklen_t* len) {
  if (val == nullptr || len == nullptr) return px_fail(EFAULT);
  const socklen_t n = std::min<socklen_t>(*len, sizeof v);
  std::memcpy(val, &v, n);
  *len = n;
  return 0;
}

bool get_int(const void* val, socklen_t len, int& out) {
  if (val == nullptr || len < sizeof(int)) return false;
  std::memcpy(&out, val, sizeof out);
  return true;
}

uint8_t linux_state(tcp::State s) {
  switch (s) {
    case tcp::State::established:
      return TCP_ESTABLISHED;
    case tcp::State::syn_sent:
      return TCP_SYN_SENT;
    case tcp::State::syn_received:
      return TCP_SYN_RECV;
    case tcp::State::fin_wait_1:
      return TCP_FIN_WAIT1;
    case tcp::State::fin_wait_2:
      return TCP_FIN_WAIT2;
    case tcp::State::time_wait:
      return TCP_TIME_WAIT;
    case tcp::State::close_wait:
      return TCP_CLOSE_WAIT;
    case tcp::State::last_ack:
      return TCP_LAST_ACK;
    case tcp::State::closing:
      return TCP_CLOSING;
    case tcp::State::closed:
      break;
  }
  return TCP_CLOSE;
}

int tcp_info_of(Runtime* rt, const Sock& s, void* val, socklen_t* len) {
  if (val == nullptr || len == nullptr) return px_fail(EFAULT);
  tcp_info ti{};
  ti.tcpi_state = s.st == Sock::St::listening ? TCP_LISTEN : TCP_CLOSE;
  const tcp::Connection* c = rt != nullptr && s.id != 0 ? rt->sk().connection(s.id) : nullptr;
  if (c != nullptr) {
    const uint32_t mss = std::max<uint32_t>(c->send_mss(), 1);
    ti.tcpi_state = linux_state(c->state());
    ti.tcpi_options = (c->timestamps_on() ? TCPI_OPT_TIMESTAMPS : 0) | (c->sack_on() ? TCPI_OPT_SACK : 0) |
                      (c->snd_wscale() || c->rcv_wscale() ? TCPI_OPT_WSCALE : 0);
    ti.tcpi_snd_wscale = c->snd_wscale() & 15;
    ti.tcpi_rcv_wscale = c->rcv_wscale() & 15;
    ti.tcpi_rto = static_cast<uint32_t>(c->rto().rto_ns() / 1000);
    ti.tcpi_snd_mss = mss;
    ti.tcpi_rcv_mss = mss;
    ti.tcpi_rtt = static_cast<uint32_t>(c->rto().srtt_ns() / 1000);
    ti.tcpi_rttvar = static_cast<uint32_t>(c->rto().rttvar_ns() / 1000);
    ti.tcpi_snd_cwnd = c->cwnd() / mss;
    ti.tcpi_snd_ssthresh = c->ssthresh() / mss;
    ti.tcpi_unacked = c->bytes_in_flight() / mss;
    ti.tcpi_total_retrans = static_cast<uint32_t>(c->stats().retransmits);
    ti.tcpi_ca_state = c->in_recovery() ? 3 : 0;  // TCP_CA_Recovery : TCP_CA_Open
  }
  const socklen_t n = std::min<socklen_t>(*len, sizeof ti);
  std::memcpy(val, &ti, n);
  *len = n;
  return 0;
}

}  // namespace

namespace weft::posix {

void apply_keepalive(Runtime* rt, const Sock& s) {
  if (rt == nullptr || s.id == 0 || s.kind != Sock::Kind::tcp || s.st == Sock::St::listening) return;
  (void)rt->sk().set_keepalive(s.id, s.keepalive, int64_t{s.keepidle} * 1'000'000'000,
                               int64_t{s.keepintvl} * 1'000'000'000, s.keepcnt);
  rt->after_call();
}

}  // namespace weft::posix

extern "C" {

int weft_px_getsockopt(int fd, int level, int opt, void* val, socklen_t* len) {
  if (sock_of(fd) == nullptr) return real().getsockopt(fd, level, opt, val, len);
  Lock g(layer_mutex());
  Sock* s = sock_of(fd);
  if (s == nullptr) return px_fail(EBADF);
  Runtime* rt = Runtime::get();
  const int ring = static_cast<int>(rt != nullptr ? rt->iface().tcp().config().send_buffer : 0);
  const bool tcp_sock = s->kind == Sock::Kind::tcp;
  if (level == SOL_SOCKET) {
    switch (opt) {
      case SO_TYPE:
        return put_int(tcp_sock ? SOCK_STREAM : SOCK_DGRAM, val, len);
      case SO_DOMAIN:
        return put_int(AF_INET, val, len);
      case SO_PROTOCOL:
        return put_int(tcp_sock ? IPPROTO_TCP : IPPROTO_UDP, val, len);
      case SO_ACCEPTCONN:
        return put_int(s->st == Sock::St::listening, val, len);
      case SO_ERROR: {
        int e = 0;
        if (rt != nullptr && s->id != 0) {
          const stack::SockErr err = rt->sk().error(s->id);
          if (err != stack::SockErr::again && !s->connect_reported) e = to_errno(err);
          if (e != 0 && s->st == Sock::St::connecting) s->connect_reported = true;
          if (e == 0 && s->st == Sock::St::connecting)
            if (const tcp::Connection* c = rt->sk().connection(s->id); c != nullptr && c->connected())
              s->st = Sock::St::connected;
        }
        return put_int(e, val, len);
      }
      case SO_REUSEADDR:
        return put_int(s->reuseaddr, val, len);
      case SO_REUSEPORT:
        return put_int(s->reuseport, val, len);
      case SO_KEEPALIVE:
        return put_int(s->keepalive, val, len);
      case SO_SNDBUF:
        return put_int(s->sndbuf > 0 ? s->sndbuf * 2 : ring, val, len);
      case SO_RCVBUF:
        return put_int(s->rcvbuf > 0 ? s->rcvbuf * 2 : ring, val, len);
      case SO_RCVLOWAT:
      case SO_SNDLOWAT:
        return put_int(1, val, len);
      case SO_RCVTIMEO:
      case SO_SNDTIMEO: {
        if (val == nullptr || len == nullptr) return px_fail(EFAULT);
        const int64_t ns = opt == SO_RCVTIMEO ? s->rcvtimeo_ns : s->sndtimeo_ns;
        const timeval tv{static_cast<time_t>(ns / 1'000'000'000),
                         static_cast<suseconds_t>(ns % 1'000'000'000 / 1000)};
        if (*len < sizeof tv) return px_fail(EINVAL);
        std::memcpy(val, &tv, sizeof tv);
        *len = sizeof tv;
        return 0;
      }
      case SO_LINGER: {
        if (val == nullptr || len == nullptr) return px_fail(EFAULT);
        const linger l{s->linger_on, s->linger_s};
        const socklen_t n = std::min<socklen_t>(*len, sizeof l);
        std::memcpy(val, &l, n);
        *len = n;
        return 0;
      }
      default:
        break;
    }
  } else if (level == IPPROTO_TCP && tcp_sock) {
    switch (opt) {
      case TCP_NODELAY:
        return put_int(s->nodelay, val, len);
      case TCP_INFO:
        return tcp_info_of(rt, *s, val, len);
      case TCP_MAXSEG: {
        const tcp::Connection* c = rt != nullptr && s->id != 0 ? rt->sk().connection(s->id) : nullptr;
        return put_int(c != nullptr ? static_cast<int>(c->send_mss()) : 536, val, len);
      }
      case TCP_KEEPIDLE:
        return put_int(s->keepidle, val, len);
      case TCP_KEEPINTVL:
        return put_int(s->keepintvl, val, len);
      case TCP_KEEPCNT:
        return put_int(s->keepcnt, val, len);
      case TCP_CONGESTION: {
        if (val == nullptr || len == nullptr) return px_fail(EFAULT);
        const char* name =
            rt != nullptr && rt->iface().tcp().config().congestion_control == tcp::CcAlgorithm::reno
                ? "reno"
                : "cubic";
        const socklen_t n = std::min<socklen_t>(*len, static_cast<socklen_t>(std::strlen(name) + 1));
        std::memcpy(val, name, n);
        *len = n;
        return 0;
      }
      default:
        break;
    }
  }
  log_once("getsockopt-" + std::to_string(level) + "-" + std::to_string(opt),
           "getsockopt(level " + std::to_string(level) + ", option " + std::to_string(opt) +
               ") on a weft socket is not supported (ENOPROTOOPT)");
  return px_fail(ENOPROTOOPT);
}

int weft_px_setsockopt(int fd, int level, int opt, const void* val, socklen_t len) {
  if (sock_of(fd) == nullptr) return real().setsockopt(fd, level, opt, val, len);
  Lock g(layer_mutex());
  Sock* s = sock_of(fd);
  if (s == nullptr) return px_fail(EBADF);
  Runtime* rt = Runtime::get();
  int v = 0;
  if (level == SOL_SOCKET) {
    switch (opt) {
      case SO_REUSEADDR:
        if (!get_int(val, len, v)) return px_fail(EINVAL);
        s->reuseaddr = v != 0;
        return 0;
      case SO_REUSEPORT:
        if (!get_int(val, len, v)) return px_fail(EINVAL);
        s->reuseport = v != 0;
        return 0;
      case SO_KEEPALIVE:
        if (!get_int(val, len, v)) return px_fail(EINVAL);
        s->keepalive = v != 0;
        apply_keepalive(rt, *s);
        return 0;
      case SO_SNDBUF:
      case SO_RCVBUF:
        if (!get_int(val, len, v)) return px_fail(EINVAL);
        (opt == SO_SNDBUF ? s->sndbuf : s->rcvbuf) = std::max(v, 0);
        log_once("bufsize",
                 "SO_SNDBUF/SO_RCVBUF: recorded; every connection on weft's stack has the rings "
                 "`weft stack run --buffer` sets");
        return 0;
      case SO_LINGER: {
        if (val == nullptr || len < sizeof(linger)) return px_fail(EINVAL);
        linger l;
        std::memcpy(&l, val, sizeof l);
        s->linger_on = l.l_onoff;
        s->linger_s = l.l_linger;
        if (l.l_onoff && l.l_linger > 0)
          log_once(
              "linger",
              "SO_LINGER with a timeout: close() returns at once; the connection finishes in the background");
        return 0;
      }
      case SO_RCVTIMEO:
      case SO_SNDTIMEO: {  // as Linux's sock_set_timeout: {0, 0} blocks for ever, a negative time is 0
        if (val == nullptr || len < sizeof(timeval)) return px_fail(EINVAL);
        timeval tv;
        std::memcpy(&tv, val, sizeof tv);
        if (tv.tv_usec < 0 || tv.tv_usec >= 1'000'000) return px_fail(EDOM);
        int64_t ns = int64_t{tv.tv_sec} * 1'000'000'000 + int64_t{tv.tv_usec} * 1000;
        if (tv.tv_sec < 0) ns = 1;  // the kernel's 0 jiffies: a blocking call returns at once
        (opt == SO_RCVTIMEO ? s->rcvtimeo_ns : s->sndtimeo_ns) = ns;
        return 0;
      }
      case SO_RCVLOWAT:
      case SO_SNDLOWAT:
        if (!get_int(val, len, v)) return px_fail(EINVAL);
        if (v > 1) log_once("lowat", "SO_RCVLOWAT/SO_SNDLOWAT above 1: ignored on weft sockets");
        return 0;
      default:
        break;
    }
  } else if (level == IPPROTO_TCP && s->kind == Sock::Kind::tcp) {
    switch (opt) {
      case TCP_NODELAY:
        if (!get_int(val, len, v)) return px_fail(EINVAL);
        s->nodelay = v != 0;
        if (rt != nullptr && s->id != 0 && s->st != Sock::St::listening) {
          (void)rt->sk().set_nagle(s->id, !s->nodelay);
          rt->after_call();
        }
        return 0;
      case TCP_KEEPIDLE:
      case TCP_KEEPINTVL:
      case TCP_KEEPCNT:
        // (Linux's bounds: idle and interval 1 s to 32767 s, at most 127 probes)
        if (!get_int(val, len, v) || v < 1 || v > (opt == TCP_KEEPCNT ? 127 : 32767)) return px_fail(EINVAL);
        (opt == TCP_KEEPIDLE ? s->keepidle : opt == TCP_KEEPINTVL ? s->keepintvl : s->keepcnt) = v;
        if (s->keepalive) apply_keepalive(rt, *s);
        return 0;
      default:
        break;
    }
  }
  log_once("setsockopt-" + std::to_string(level) + "-" + std::to_string(opt),
           "setsockopt(level " + std::to_string(level) + ", option " + std::to_string(opt) +
               ") on a weft socket is not supported (ENOPROTOOPT)");
  return px_fail(ENOPROTOOPT);
}

}  // extern "C"
