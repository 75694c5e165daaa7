#include "probe/rdma/discovery.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "base/clock.hpp"
#include "net/address.hpp"
#include "net/socket.hpp"

namespace weft::probe::rdma_discovery {

namespace {
constexpr uint8_t kReq[4] = {'W', 'F', 'R', 'Q'};
constexpr uint8_t kRep[4] = {'W', 'F', 'R', 'A'};
constexpr uint8_t kVersion = 1;

void put32(uint8_t* p, uint32_t v) {
  for (int i = 3; i >= 0; --i, v >>= 8) p[i] = static_cast<uint8_t>(v);
}
void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
uint32_t get32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
}  // namespace

std::array<uint8_t, kRequestSize> encode_request() {
  std::array<uint8_t, kRequestSize> b{};
  std::memcpy(b.data(), kReq, 4);
  b[4] = kVersion;
  return b;
}

bool is_request(std::span<const uint8_t> in) {
  return in.size() == kRequestSize && std::memcmp(in.data(), kReq, 4) == 0 && in[4] == kVersion &&
         in[5] == 0 && in[6] == 0 && in[7] == 0;
}

std::array<uint8_t, kReplySize> encode_reply(const RdmaAddress& a) {
  std::array<uint8_t, kReplySize> b{};
  std::memcpy(b.data(), kRep, 4);
  b[4] = kVersion;
  b[5] = a.ethernet ? 0x01 : 0x00;
  b[6] = a.port;
  put32(b.data() + 8, a.qpn);
  put32(b.data() + 12, a.qkey);
  put16(b.data() + 16, a.lid);
  put16(b.data() + 18, static_cast<uint16_t>(a.gid_index < 0 ? 0xffff : a.gid_index));
  std::memcpy(b.data() + 24, a.gid.raw, 16);
  return b;
}

std::optional<RdmaAddress> decode_reply(std::span<const uint8_t> in) {
  if (in.size() != kReplySize || std::memcmp(in.data(), kRep, 4) != 0 || in[4] != kVersion)
    return std::nullopt;
  if ((in[5] & ~0x01) != 0 || in[6] == 0 || in[7] != 0 || get32(in.data() + 20) != 0) return std::nullopt;
  RdmaAddress a;
  a.ethernet = in[5] & 0x01;
  a.port = in[6];
  a.qpn = get32(in.data() + 8);
  a.qkey = get32(in.data() + 12);
  a.lid = get16(in.data() + 16);
  const uint16_t gi = get16(in.data() + 18);
  a.gid_index = gi == 0xffff ? -1 : gi;
  std::memcpy(a.gid.raw, in.data() + 24, 16);
  // A QPN is 24 bits and never 0 or 1 (the special QPs); an address needs a GID or a LID.
  const bool gid_zero = std::all_of(a.gid.raw, a.gid.raw + 16, [](uint8_t x) { return x == 0; });
  if (a.qpn < 2 || a.qpn > 0xffffff || (gid_zero && a.lid == 0)) return std::nullopt;
  return a;
}

Result<RdmaAddress> query(const std::string& host, uint16_t port, std::chrono::milliseconds timeout) {
  auto to = net::resolve(host, port);
  if (!to) return std::unexpected(to.error());
  auto bind = net::SocketAddress::parse_ip(to->family() == AF_INET6 ? "::" : "0.0.0.0", 0);
  if (!bind) return std::unexpected(bind.error());
  auto fd = net::udp_socket(*bind);
  if (!fd) return std::unexpected(fd.error());
  const auto req = encode_request();
  const int64_t end = mono_ns() + std::chrono::nanoseconds(timeout).count();
  const int64_t step = std::chrono::nanoseconds(timeout).count() / 3;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (sendto(fd->get(), req.data(), req.size(), 0, to->sa(), to->length) < 0)
      return fail_errno("rdma discovery: sendto " + to->to_string());
    const int64_t try_end = std::min(end, mono_ns() + step);
    for (int64_t left; (left = try_end - mono_ns()) > 0;) {
      pollfd p{fd->get(), POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left / 1'000'000) + 1) <= 0) continue;
      uint8_t buf[128];
      sockaddr_storage from{};
      socklen_t fl = sizeof from;
      ssize_t n = recvfrom(fd->get(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &fl);
      if (n <= 0) continue;
      if (!net::SocketAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&from), fl).same_endpoint(*to))
        continue;
      if (auto a = decode_reply(std::span<const uint8_t>(buf, static_cast<size_t>(n)))) return *a;
    }
  }
  return fail("rdma discovery: no answer from {} within {} ms (is `weft rdma responder` running there?)",
              to->to_string(), timeout.count());
}

Result<std::unique_ptr<Server>> Server::start(const std::string& ip, uint16_t port,
                                              const RdmaAddress& address) {
  auto at = net::SocketAddress::parse_ip(ip, port);
  if (!at) return std::unexpected(at.error());
  auto fd = net::udp_socket(*at);
  if (!fd) return std::unexpected(fd.error());
  auto local = net::local_address(fd->get());
  if (!local) return std::unexpected(local.error());
  auto stop = EventFd::create();
  if (!stop) return std::unexpected(stop.error());
  return std::unique_ptr<Server>(new Server(std::move(*fd), std::move(*stop), local->port(), address));
}

Server::Server(Fd fd, EventFd stop, uint16_t port, const RdmaAddress& a)
    : fd_(std::move(fd)), stop_(std::move(stop)), port_(port), reply_(encode_reply(a)) {
  thread_ = std::thread([this] { loop(); });
}

Server::~Server() {
  stop_.signal();
  if (thread_.joinable()) thread_.join();
}

void Server::loop() {
  for (;;) {
    pollfd p[2] = {{fd_.get(), POLLIN, 0}, {stop_.fd(), POLLIN, 0}};
    if (poll(p, 2, -1) <= 0) continue;  // EINTR
    if (p[1].revents) return;
    for (;;) {
      uint8_t buf[64];
      sockaddr_storage from{};
      socklen_t fl = sizeof from;
      ssize_t n = recvfrom(fd_.get(), buf, sizeof buf, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &fl);
      if (n < 0) break;
      if (!is_request(std::span<const uint8_t>(buf, static_cast<size_t>(n)))) {
        ++rejected_;
        continue;
      }
      if (sendto(fd_.get(), reply_.data(), reply_.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from),
                 fl) == static_cast<ssize_t>(reply_.size()))
        ++answered_;
    }
  }
}

}  // namespace weft::probe::rdma_discovery
