#include "rdma/side_channel.hpp"

#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

namespace weft::rdma {

namespace {
using clock = std::chrono::steady_clock;

Result<addrinfo*> resolve(const std::string& host, uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* res = nullptr;
  std::string p = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), p.c_str(), &hints, &res);
  if (rc != 0) return fail("getaddrinfo {}:{}: {}", host, port, gai_strerror(rc));
  return res;
}

// Waits for fd to become ready for events before deadline; false on timeout.
Result<bool> wait_fd(int fd, short events, clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - clock::now()).count();
    if (left < 0) left = 0;
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail_errno("poll side channel");
    return n > 0;
  }
}
}  // namespace

SideChannel& SideChannel::operator=(SideChannel&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

SideChannel::~SideChannel() {
  if (fd_ >= 0) ::close(fd_);
}

Result<SideChannel> SideChannel::listen(const std::string& host, uint16_t port) {
  auto ai = resolve(host, port, true);
  if (!ai) return std::unexpected(ai.error());
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(*ai, freeaddrinfo);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail_errno("socket");
  SideChannel s(fd);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, (*ai)->ai_addr, (*ai)->ai_addrlen) < 0) return fail_errno(fmt::format("bind {}:{}", host, port));
  if (::listen(fd, 64) < 0) return fail_errno("listen");
  return s;
}

Result<SideChannel> SideChannel::connect(const std::string& host, uint16_t port, milliseconds timeout) {
  auto ai = resolve(host, port, false);
  if (!ai) return std::unexpected(ai.error());
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(*ai, freeaddrinfo);
  const auto deadline = clock::now() + timeout;
  int last = 0;
  do {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return fail_errno("socket");
    SideChannel s(fd);
    int rc = ::connect(fd, (*ai)->ai_addr, (*ai)->ai_addrlen);
    if (rc < 0 && errno == EINPROGRESS) {
      auto ready = wait_fd(fd, POLLOUT, deadline);
      if (!ready) return std::unexpected(ready.error());
      if (*ready) {
        socklen_t len = sizeof last;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &last, &len);
        rc = last == 0 ? 0 : -1;
      } else {
        last = ETIMEDOUT;
      }
    } else if (rc < 0) {
      last = errno;
    }
    if (rc == 0) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return s;
    }
    // Refused: the peer is not listening yet. Try again shortly.
    std::this_thread::sleep_for(milliseconds(50));
  } while (clock::now() < deadline);
  return fail_errno(fmt::format("connect {}:{} (side channel, {} ms)", host, port, timeout.count()),
                    last ? last : ETIMEDOUT);
}

Result<SideChannel> SideChannel::accept(milliseconds timeout) {
  auto ready = wait_fd(fd_, POLLIN, clock::now() + timeout);
  if (!ready) return std::unexpected(ready.error());
  if (!*ready) return fail_errno(fmt::format("accept (side channel, {} ms)", timeout.count()), ETIMEDOUT);
  int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return fail_errno("accept");
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return SideChannel(fd);
}

Result<uint16_t> SideChannel::port() const {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) < 0) return fail_errno("getsockname");
  return ntohs(a.sin_port);
}

Status SideChannel::send_all(std::span<const std::byte> data, milliseconds timeout) {
  const auto deadline = clock::now() + timeout;
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) return fail_errno("send (side channel)");
    auto ready = wait_fd(fd_, POLLOUT, deadline);
    if (!ready) return std::unexpected(ready.error());
    if (!*ready) return fail_errno("send (side channel)", ETIMEDOUT);
  }
  return {};
}

Status SideChannel::recv_all(std::span<std::byte> data, milliseconds timeout) {
  const auto deadline = clock::now() + timeout;
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::recv(fd_, data.data() + done, data.size() - done, MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return fail("recv (side channel): peer closed after {} of {} bytes", done, data.size());
    if (errno != EAGAIN && errno != EINTR) return fail_errno("recv (side channel)");
    auto ready = wait_fd(fd_, POLLIN, deadline);
    if (!ready) return std::unexpected(ready.error());
    if (!*ready) return fail_errno("recv (side channel)", ETIMEDOUT);
  }
  return {};
}

Result<EndpointInfo> SideChannel::exchange(const EndpointInfo& mine, milliseconds timeout) {
  auto w = mine.encode();
  if (auto s = send_all(w, timeout); !s) return std::unexpected(s.error());
  EndpointInfo::Wire theirs{};
  if (auto s = recv_all(theirs, timeout); !s) return std::unexpected(s.error());
  return EndpointInfo::decode(theirs);
}

Status SideChannel::barrier(milliseconds timeout) {
  std::byte b{0x42};
  if (auto s = send_all({&b, 1}, timeout); !s) return s;
  return recv_all({&b, 1}, timeout);
}

}  // namespace weft::rdma
