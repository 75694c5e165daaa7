#include "sim/http_load_client.hpp"

#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace weft::sim {

std::string build_post_request(std::string_view path, std::string_view content_type, std::string_view body,
                               std::string_view authorization) {
  std::string r = fmt::format(
      "POST {} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {}\r\nContent-Length: {}\r\n"
      "{}{}{}Connection: keep-alive\r\n\r\n",
      path, content_type, body.size(), authorization.empty() ? "" : "Authorization: ", authorization,
      authorization.empty() ? "" : "\r\n");
  r.append(body);
  return r;
}

HttpLoadConnection::~HttpLoadConnection() { close_connection(); }

void HttpLoadConnection::close_connection() {
  if (ssl_) SSL_free(ssl_);
  ssl_ = nullptr;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status HttpLoadConnection::connect_loopback(uint16_t port, ssl_ctx_st* tls) {
  port_ = port;
  tls_ = tls;
  close_connection();
  in_.clear();
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return fail("socket: {}", std::strerror(errno));
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // else Nagle + delayed ACK add 40 ms
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    int e = errno;
    ::close(fd_);
    fd_ = -1;
    return fail("connect 127.0.0.1:{}: {}", port, std::strerror(e));
  }
  if (tls_) {
    ssl_ = SSL_new(tls_);
    if (!ssl_ || SSL_set_fd(ssl_, fd_) != 1 || SSL_connect(ssl_) != 1) {
      ERR_clear_error();
      close_connection();
      return fail("TLS handshake with 127.0.0.1:{} failed", port);
    }
  }
  return {};
}

Status HttpLoadConnection::read_more() {
  char buf[16384];
  ssize_t n;
  if (ssl_) {
    int r = SSL_read(ssl_, buf, sizeof buf);
    if (r <= 0) {
      ERR_clear_error();
      return fail("TLS read failed or the controller closed the connection");
    }
    in_.append(buf, static_cast<size_t>(r));
    return {};
  }
  do n = ::recv(fd_, buf, sizeof buf, 0);
  while (n < 0 && errno == EINTR);
  if (n < 0) return fail("recv: {}", std::strerror(errno));
  if (n == 0) return fail("the controller closed the connection");
  in_.append(buf, static_cast<size_t>(n));
  return {};
}

Result<HttpLoadConnection::Answer> HttpLoadConnection::exchange(std::string_view request) {
  auto broken = [&](Error e) -> Result<Answer> {
    close_connection();
    return std::unexpected(std::move(e));
  };
  if (fd_ < 0)
    if (auto st = connect_loopback(port_, tls_); !st) return std::unexpected(st.error());
  if (ssl_) {  // blocking socket: SSL_write returns once all of it is written
    ERR_clear_error();
    if (SSL_write(ssl_, request.data(), static_cast<int>(request.size())) != static_cast<int>(request.size()))
      return broken(Error{"TLS write failed"});
  }
  for (size_t sent = ssl_ ? request.size() : 0; sent < request.size();) {
    ssize_t n = ::send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return broken(Error{fmt::format("send: {}", std::strerror(errno))});
    sent += static_cast<size_t>(n);
  }
  size_t head_end;
  while ((head_end = in_.find("\r\n\r\n")) == std::string::npos)
    if (auto st = read_more(); !st) return broken(st.error());
  std::string_view head(in_.data(), head_end);
  Answer a;
  if (!head.starts_with("HTTP/1.1 ") || head.size() < 12) return broken(Error{"not an HTTP/1.1 answer"});
  std::from_chars(head.data() + 9, head.data() + 12, a.status);
  size_t length = 0;
  bool has_length = false;
  for (size_t pos = head.find("\r\n"); pos != std::string_view::npos; pos = head.find("\r\n", pos + 2)) {
    std::string_view line = head.substr(pos + 2, head.find("\r\n", pos + 2) - (pos + 2));
    constexpr std::string_view kLength = "content-length:";
    if (line.size() > kLength.size() && std::equal(kLength.begin(), kLength.end(), line.begin(),
                                                   [](char x, char y) { return x == (y | 0x20); })) {
      std::string_view v = line.substr(kLength.size());
      while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      has_length = std::from_chars(v.data(), v.data() + v.size(), length).ec == std::errc{};
    }
  }
  if (!has_length) return broken(Error{"answer without Content-Length"});
  while (in_.size() < head_end + 4 + length)
    if (auto st = read_more(); !st) return broken(st.error());
  a.body = in_.substr(head_end + 4, length);
  in_.erase(0, head_end + 4 + length);
  return a;
}

}  // namespace weft::sim
