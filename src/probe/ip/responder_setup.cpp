// The responder's set-up: the epoll set, the UDP socket (with kernel timestamps and, on a wildcard
// address, the probed address to answer from), the TCP listener, the connection cap; and the
// public interface's thin methods.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "base/log.hpp"
#include "net/address.hpp"
#include "net/epoll.hpp"
#include "net/socket.hpp"
#include "net/timestamping.hpp"
#include "probe/ip/responder_impl.hpp"

namespace weft::probe {

Status Responder::Impl::open(const ResponderConfig& c) {
  cfg = c;
  tx_ring.resize(kTxRing);
  // Half the descriptors at most, the rest for this host's own probes and everything else.
  conn_cap = std::max<size_t>(1, std::min<size_t>(c.max_tcp_connections, net::raise_fd_limit() / 2));
  echo_conns.reserve(conn_cap);
  followups_skip_ids = net::untimestamped_sends_skip_ids();
  followups_on = c.followups;
  log().debug("responder: follow-ups are sent {} a transmit timestamp of their own",
              followups_skip_ids ? "without" : "with");
  auto ep_r = net::Epoll::create();
  if (!ep_r) return std::unexpected(ep_r.error());
  ep = std::move(*ep_r);
  auto w = EventFd::create();
  if (!w) return std::unexpected(w.error());
  wake = std::move(*w);
  if (auto st = ep.add(wake.fd(), EPOLLIN, tag(kWake, 0)); !st) return st;
  if (c.serve_udp) {
    auto addr = net::SocketAddress::parse_ip(c.listen_address, c.udp_port);
    if (!addr) return fail("responder: listen address: {}", addr.error().message);
    auto fd = net::udp_socket(*addr);
    if (!fd) return fail("responder: {}", fd.error().message);
    // On a wildcard address, replies must leave from the address each probe was sent to.
    if (addr->is_unspecified()) {
      if (auto st = net::enable_pktinfo(fd->get(), addr->family()); !st)
        return fail("responder: {}: {}", addr->to_string(), st.error().message);
    }
    if (auto st = net::enable_timestamping(fd->get(), c.followups); !st) {
      log().warn("responder: kernel timestamps unavailable ({}), using the user-space clock",
                 st.error().message);
      followups_on = false;
    }
    udp = std::move(*fd);
    auto local = net::local_address(udp.get());
    udp_port = local ? local->port() : c.udp_port;
    if (auto st = ep.add(udp.get(), EPOLLIN, tag(kUdp, 0)); !st) return st;
  }
  if (c.serve_tcp) {
    auto addr = net::SocketAddress::parse_ip(c.listen_address, c.tcp_port);
    if (!addr) return fail("responder: listen address: {}", addr.error().message);
    auto fd = net::tcp_listener(*addr, 4096);
    if (!fd) return fail("responder: {}", fd.error().message);
    if (c.defer_accept) {
      // Seconds before an accepted-but-silent connection is handed over anyway (responder.hpp).
      int secs = 5;
      if (setsockopt(fd->get(), IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, sizeof secs) != 0)
        log().warn("responder: TCP_DEFER_ACCEPT: {}: every connect probe will be accepted",
                   std::strerror(errno));
    }
    listener = std::move(*fd);
    auto local = net::local_address(listener.get());
    tcp_port = local ? local->port() : c.tcp_port;
    if (auto st = ep.add(listener.get(), EPOLLIN, tag(kListen, 0)); !st) return st;
  }
  if (!c.serve_udp && !c.serve_tcp) return fail("responder: nothing to serve (neither UDP nor TCP)");
  net::raise_fd_limit();
  return {};
}

Responder::Responder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Responder::~Responder() = default;

Result<std::unique_ptr<Responder>> Responder::create(const ResponderConfig& config) {
  auto impl = std::make_unique<Impl>();
  if (auto st = impl->open(config); !st) return std::unexpected(st.error());
  return std::unique_ptr<Responder>(new Responder(std::move(impl)));
}

ResponderCounters Responder::counters() const {
  auto l = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  ResponderCounters out;
  out.answered = l(impl_->answered);
  out.malformed = l(impl_->malformed);
  out.tcp_accepted = l(impl_->tcp_accepted);
  out.tcp_refused = l(impl_->tcp_refused);
  out.tcp_reaped = l(impl_->tcp_reaped);
  out.followups = l(impl_->followups);
  out.carried = l(impl_->carried);
  out.shed = l(impl_->shed);
  out.unstamped = l(impl_->unstamped);
  out.wakeups = l(impl_->wakeups);
  out.streaming_wakeups = l(impl_->streaming_wakeups);
  return out;
}

uint16_t Responder::udp_port() const { return impl_->udp_port; }
uint16_t Responder::tcp_port() const { return impl_->tcp_port; }

}  // namespace weft::probe
