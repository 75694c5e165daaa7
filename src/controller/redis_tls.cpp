#include "controller/redis_tls.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "base/signals.hpp"
#include "controller/store.hpp"
#include "net/address.hpp"
#include "net/http/tls.hpp"
#include "net/socket.hpp"

namespace weft::controller::redis {
namespace {

using Clock = std::chrono::steady_clock;

bool set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

int ms_left(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// A TCP connection to host:port within the deadline (the name resolved as the CLI does).
Result<Fd> connect_tcp(const std::string& host, int port, Clock::time_point deadline) {
  auto unreachable = [&](std::string why) {
    return unexpected(Error{fmt::format("{}:{}: {}", host, port, why), kStoreUnreachable});
  };
  auto to = net::resolve(host, static_cast<uint16_t>(port));
  if (!to) return unreachable(to.error().message);
  auto fd = net::tcp_connect_start(net::SocketAddress{}, *to);  // TCP_NODELAY: RESP is request/reply
  if (!fd) return unreachable(fd.error().message);
  pollfd p{fd->get(), POLLOUT, 0};
  if (::poll(&p, 1, ms_left(deadline)) != 1) return unreachable("connection timed out");
  if (int err = net::socket_error(fd->get()); err != 0) return unreachable(std::strerror(err));
  return std::move(*fd);
}

}  // namespace

Result<std::shared_ptr<TlsClientContext>> TlsClientContext::load(const TlsFiles& files) {
  std::shared_ptr<TlsClientContext> c(new TlsClientContext());
  c->ctx_ = SSL_CTX_new(TLS_client_method());
  if (!c->ctx_) return fail("redis TLS: {}", net::http::tls_error_text("cannot create a TLS context"));
  SSL_CTX_set_min_proto_version(c->ctx_, TLS1_2_VERSION);
  SSL_CTX_set_verify(c->ctx_, SSL_VERIFY_PEER, nullptr);
  const bool loaded = files.ca.empty()
                          ? SSL_CTX_set_default_verify_paths(c->ctx_) == 1
                          : SSL_CTX_load_verify_locations(c->ctx_, files.ca.c_str(), nullptr) == 1;
  if (!loaded)
    return fail("redis TLS: cannot load the CA {}: {}", files.ca.empty() ? "(system store)" : files.ca,
                net::http::tls_error_text());
  if (files.cert.empty() != files.key.empty())
    return fail("redis TLS: a client certificate needs both store_cert and store_key");
  if (!files.cert.empty()) {
    if (SSL_CTX_use_certificate_chain_file(c->ctx_, files.cert.c_str()) != 1)
      return fail("redis TLS: cannot load the client certificate {}: {}", files.cert,
                  net::http::tls_error_text());
    if (SSL_CTX_use_PrivateKey_file(c->ctx_, files.key.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(c->ctx_) != 1)
      return fail("redis TLS: cannot use the key {} with {}: {}", files.key, files.cert,
                  net::http::tls_error_text());
  }
  // The pump retries writes with a buffer that may have moved, and reads return after a record
  // that carried no data (a TLS 1.3 session ticket) instead of blocking for the next one.
  SSL_CTX_set_mode(c->ctx_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_clear_mode(c->ctx_, SSL_MODE_AUTO_RETRY);
  return c;
}

TlsClientContext::~TlsClientContext() { SSL_CTX_free(ctx_); }

Result<std::unique_ptr<TlsTunnel>> TlsTunnel::open(std::shared_ptr<TlsClientContext> ctx,
                                                   const std::string& host, int port,
                                                   std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::unique_ptr<TlsTunnel> t(new TlsTunnel());
  t->ctx_ = std::move(ctx);
  auto tcp = connect_tcp(host, port, deadline);
  if (!tcp) return std::unexpected(tcp.error());
  t->tcp_ = std::move(*tcp);
  t->ssl_ = SSL_new(t->ctx_->get());
  if (!t->ssl_ || SSL_set_fd(t->ssl_, t->tcp_.get()) != 1)
    return fail("{}:{}: {}", host, port, net::http::tls_error_text("cannot create a TLS connection"));
  if (net::SocketAddress::parse_ip(host, 0)) {  // an address: checked against the IP SANs
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl_), host.c_str());
  } else {
    SSL_set_tlsext_host_name(t->ssl_, host.c_str());
    SSL_set1_host(t->ssl_, host.c_str());
  }
  for (;;) {
    ERR_clear_error();
    const int rc = SSL_connect(t->ssl_);
    if (rc == 1) break;
    const int e = SSL_get_error(t->ssl_, rc);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
      const long verify = SSL_get_verify_result(t->ssl_);
      if (verify != X509_V_OK)
        return fail("{}:{}: TLS handshake: the server's certificate is not trusted: {}", host, port,
                    X509_verify_cert_error_string(verify));
      // A connection cut during the handshake may be a server restarting (worth another try);
      // anything else (a plain port's answer, a protocol alert) is a configuration to fix.
      if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN)
        return unexpected(
            Error{fmt::format("{}:{}: the connection closed during the TLS handshake", host, port),
                  kStoreUnreachable});
      return fail("{}:{}: TLS handshake failed: {} (is it a TLS port?)", host, port,
                  net::http::tls_error_text("the server closed the connection"));
    }
    pollfd p{t->tcp_.get(), static_cast<short>(e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
    if (::poll(&p, 1, ms_left(deadline)) != 1)
      return unexpected(Error{fmt::format("{}:{}: TLS handshake timed out (is it a TLS port?)", host, port),
                              kStoreUnreachable});
  }
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return fail_errno("socketpair");
  t->inner_.reset(pair[0]);
  t->plain_.reset(pair[1]);  // blocking: hiredis's synchronous API expects it
  if (!set_nonblocking(t->inner_.get())) return fail_errno("fcntl");
  auto stop = EventFd::create();
  if (!stop) return std::unexpected(stop.error());
  t->stop_ = std::move(*stop);
  t->thread_ = std::thread([p = t.get()] { p->pump(); });
  return t;
}

void TlsTunnel::record_failure(std::string why, bool answered) {
  // Redis checks a client's certificate after the TLS 1.3 handshake: one it does not get or trust
  // shows as a connection closed before any answer.
  if (!answered)
    why +=
        " before the server answered anything: does it want a client certificate (store_cert, "
        "store_key), and does its CA sign ours?";
  std::lock_guard lk(mu_);
  failure_ = std::move(why);
}

std::string TlsTunnel::failure() const {
  std::lock_guard lk(mu_);
  return failure_;
}

TlsTunnel::~TlsTunnel() {
  if (thread_.joinable()) {
    stop_.signal();
    thread_.join();
  }
  if (ssl_) SSL_free(ssl_);
}

void TlsTunnel::pump() {
  // OpenSSL write()s the TCP socket: a server that refused the handshake (no client certificate)
  // and reset the connection would raise SIGPIPE and end the process; here it is a TLS error.
  const SigpipeBlock no_sigpipe;
  pump_until_closed();
  inner_.reset();  // hiredis reads EOF: its error and the store's reconnect are those of plain TCP
}

// Moves bytes both ways until either side closes or fails, or the tunnel is destroyed. Each turn
// does every step that can make progress, and polls only when none could.
void TlsTunnel::pump_until_closed() {
  constexpr size_t kCap = 64 * 1024;
  std::string up, down;  // plain -> TLS, TLS -> plain
  up.reserve(kCap);
  down.reserve(kCap);
  std::array<char, 16 * 1024> chunk;
  bool plain_eof = false, tls_eof = false, write_wants_read = false, write_wants_write = false;
  bool answered = false;  // the server has sent data
  for (;;) {
    bool progress = false;
    // hiredis's commands in.
    while (!plain_eof && up.size() < kCap) {
      const ssize_t n = ::read(inner_.get(), chunk.data(), std::min(chunk.size(), kCap - up.size()));
      if (n > 0) {
        up.append(chunk.data(), static_cast<size_t>(n));
        progress = true;
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        plain_eof = true;  // hiredis closed its end (redisFree): the connection is done
      } else {
        break;
      }
    }
    // ... out over TLS.
    write_wants_read = write_wants_write = false;
    while (!up.empty()) {
      ERR_clear_error();
      const int n = SSL_write(ssl_, up.data(), static_cast<int>(up.size()));
      if (n > 0) {
        up.erase(0, static_cast<size_t>(n));
        progress = true;
        continue;
      }
      const int e = SSL_get_error(ssl_, n);
      if (e == SSL_ERROR_WANT_READ)
        write_wants_read = true;
      else if (e == SSL_ERROR_WANT_WRITE)
        write_wants_write = true;
      else {
        record_failure(net::http::tls_error_text("the TLS connection was cut"), answered);
        return;
      }
      break;
    }
    if (plain_eof && up.empty()) {
      SSL_shutdown(ssl_);
      return;
    }
    // Replies in over TLS (SSL_read also drains records OpenSSL has buffered already).
    while (!tls_eof && down.size() < kCap) {
      ERR_clear_error();
      const int n =
          SSL_read(ssl_, chunk.data(), static_cast<int>(std::min(chunk.size(), kCap - down.size())));
      if (n > 0) {
        down.append(chunk.data(), static_cast<size_t>(n));
        progress = answered = true;
        continue;
      }
      const int e = SSL_get_error(ssl_, n);
      if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
        tls_eof = true;
        record_failure(e == SSL_ERROR_ZERO_RETURN ? "the server closed the TLS connection"
                                                  : net::http::tls_error_text("the TLS connection was cut"),
                       answered);
      }
      break;
    }
    // ... out to hiredis.
    while (!down.empty()) {
      const ssize_t n = ::send(inner_.get(), down.data(), down.size(), MSG_NOSIGNAL);
      if (n > 0) {
        down.erase(0, static_cast<size_t>(n));
        progress = true;
      } else if (errno == EAGAIN || errno == EINTR) {
        break;
      } else {
        return;  // hiredis's end is gone
      }
    }
    if (tls_eof && down.empty()) return;  // the server closed: hiredis reads EOF next
    if (progress) continue;
    pollfd p[3] = {
        {inner_.get(),
         static_cast<short>((!plain_eof && up.size() < kCap ? POLLIN : 0) | (!down.empty() ? POLLOUT : 0)),
         0},
        {tcp_.get(),
         static_cast<short>((!tls_eof && (down.size() < kCap || write_wants_read) ? POLLIN : 0) |
                            (write_wants_write ? POLLOUT : 0)),
         0},
        {stop_.fd(), POLLIN, 0},
    };
    if (::poll(p, 3, -1) < 0 && errno != EINTR) return;
    if (p[2].revents) return;
  }
}

}  // namespace weft::controller::redis
