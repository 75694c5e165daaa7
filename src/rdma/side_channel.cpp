#include "rdma/side_channel.hpp"

#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <thread>

#include "base/little_endian.hpp"
#include "net/address.hpp"
#include "net/socket.hpp"

namespace weft::rdma {

namespace {
using clock = std::chrono::steady_clock;

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

Result<SideChannel> SideChannel::listen(const std::string& host, uint16_t port) {
  auto addr = net::resolve(host.empty() ? "0.0.0.0" : host, port);
  if (!addr) return std::unexpected(addr.error());
  auto fd = net::tcp_listener(*addr, 64);
  if (!fd) return std::unexpected(fd.error());
  return SideChannel(std::move(*fd));
}

Result<SideChannel> SideChannel::connect(const std::string& host, uint16_t port, milliseconds timeout,
                                         bool retry_refused) {
  auto to = net::resolve(host, port);
  if (!to) return std::unexpected(to.error());
  const auto deadline = clock::now() + timeout;
  int last = ETIMEDOUT;
  do {
    auto fd = net::tcp_connect_start(net::SocketAddress{}, *to);
    if (!fd) return std::unexpected(fd.error());
    // Probe sockets reset on close; a side channel closes gracefully so its last bytes arrive.
    linger off{0, 0};
    setsockopt(fd->get(), SOL_SOCKET, SO_LINGER, &off, sizeof off);
    auto ready = wait_fd(fd->get(), POLLOUT, deadline);
    if (!ready) return std::unexpected(ready.error());
    if (*ready) {
      last = net::socket_error(fd->get());
      if (last == 0) return SideChannel(std::move(*fd));
      if (!retry_refused) break;
    }
    // Refused: the peer is not listening yet. Try again shortly.
    std::this_thread::sleep_for(milliseconds(50));
  } while (clock::now() < deadline);
  return fail_errno(fmt::format("connect {} (side channel, {} ms)", to->to_string(), timeout.count()), last);
}

Result<SideChannel> SideChannel::accept(milliseconds timeout) {
  auto ready = wait_fd(fd(), POLLIN, clock::now() + timeout);
  if (!ready) return std::unexpected(ready.error());
  if (!*ready) return fail_errno(fmt::format("accept (side channel, {} ms)", timeout.count()), ETIMEDOUT);
  Fd c(::accept4(fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (!c.valid()) return fail_errno("accept (side channel)");
  int one = 1;
  setsockopt(c.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return SideChannel(std::move(c));
}

Result<uint16_t> SideChannel::port() const {
  auto a = net::local_address(fd());
  if (!a) return std::unexpected(a.error());
  return a->port();
}

Status SideChannel::send_all(std::span<const std::byte> data, milliseconds timeout) {
  const auto deadline = clock::now() + timeout;
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd(), data.data() + done, data.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) return fail_errno("send (side channel)");
    auto ready = wait_fd(fd(), POLLOUT, deadline);
    if (!ready) return std::unexpected(ready.error());
    if (!*ready) return fail_errno("send (side channel)", ETIMEDOUT);
  }
  return {};
}

Status SideChannel::recv_all(std::span<std::byte> data, milliseconds timeout) {
  const auto deadline = clock::now() + timeout;
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::recv(fd(), data.data() + done, data.size() - done, MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return fail("recv (side channel): peer closed after {} of {} bytes", done, data.size());
    if (errno != EAGAIN && errno != EINTR) return fail_errno("recv (side channel)");
    auto ready = wait_fd(fd(), POLLIN, deadline);
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

Result<std::vector<std::byte>> SideChannel::exchange_record(std::span<const std::byte> mine, size_t max_len,
                                                            milliseconds timeout) {
  if (mine.size() > UINT32_MAX) return fail("side channel record: {} bytes is too long", mine.size());
  std::array<std::byte, 4> len{};
  le::store<uint32_t>(len.data(), static_cast<uint32_t>(mine.size()));
  const auto deadline = clock::now() + timeout;
  auto left = [&] {
    return std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(deadline - clock::now()));
  };
  if (auto s = send_all(len, left()); !s) return std::unexpected(s.error());
  if (auto s = send_all(mine, left()); !s) return std::unexpected(s.error());
  if (auto s = recv_all(len, left()); !s) return std::unexpected(s.error());
  const size_t n = le::load<uint32_t>(len.data());
  if (n > max_len)
    return fail("side channel record from the peer: {} bytes, at most {} expected", n, max_len);
  std::vector<std::byte> theirs(n);
  if (auto s = recv_all(theirs, left()); !s) return std::unexpected(s.error());
  return theirs;
}

Status SideChannel::barrier(milliseconds timeout) {
  std::byte b{0x42};
  if (auto s = send_all({&b, 1}, timeout); !s) return s;
  return recv_all({&b, 1}, timeout);
}

bool SideChannel::peer_closed_within(milliseconds limit) const {
  const auto end = clock::now() + limit;
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(end - clock::now());
    // Not POLLIN: bytes the peer sent before (a barrier it reached first) say nothing about
    // whether it is still there. POLLRDHUP is its FIN, POLLHUP/POLLERR a reset.
    pollfd p{fd(), POLLRDHUP, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (r > 0) return true;
    if (r < 0 && errno == EINTR && left.count() > 0) continue;
    return false;
  }
}

}  // namespace weft::rdma
