// TCP connect probes: one non-blocking connect per probe, timed by the kernel's first RTT
// sample of the connection (its SYN -> SYN/ACK time).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/log.hpp"
#include "probe/ip/prober_impl.hpp"

namespace weft::probe {

void Prober::Impl::tcp_start(uint32_t tindex, TargetState& t) {
  const int64_t tx_mono = mono_ns();
  Slot& s = new_slot(tindex, t, tx_mono);
  s.sock = static_cast<uint8_t>(t.sock);  // the address family: which spare sockets it may use
  if (tcp_open >= tcp_cap) {
    Counters::inc(ctr.send_errors);
    mark_unsent(s, fmt::format("{} TCP connect probes already open (the cap)", tcp_cap));
    return;  // stays pending until its deadline, counted in no window
  }
  const uint64_t ev_tag = tag(kTcpConnect, s.seq);
  auto& spare = tcp_spare[t.sock];
  if (!spare.empty()) {  // a disconnected socket of an earlier probe (see tcp_spare)
    Fd fd = std::move(spare.back());
    spare.pop_back();
    if (::connect(fd.get(), t.addr.sa(), t.addr.length) != 0 && errno != EINPROGRESS) {
      const int err = errno;
      const std::string why = fmt::format("connect tcp {}: {}", t.addr_text, std::strerror(err));
      if (!warned_send) {
        log().warn("prober: {}", why);
        warned_send = true;
      }
      Counters::inc(ctr.send_errors);
      if (is_local_failure(err)) mark_unsent(s, why);
      return;  // fd closes
    }
    s.fd = fd.release();
    ++tcp_open;
    if (auto st = ep.modify(s.fd, EPOLLOUT | EPOLLONESHOT, ev_tag); !st) {
      close_probe_fd(s);
      Counters::inc(ctr.send_errors);
    }
    return;
  }
  auto fd = net::tcp_connect_start(bind_addr[t.sock], t.addr, /*no_delay=*/false);
  if (!fd) {
    if (!warned_send) {
      log().warn("prober: {}", fd.error().message);
      warned_send = true;
    }
    Counters::inc(ctr.send_errors);
    if (is_local_failure(fd.error().code)) mark_unsent(s, fd.error().message);
    return;
  }
  s.fd = fd->release();
  ++tcp_open;
  // One-shot: a socket kept for reuse must not report its disconnect (see recycle_probe_fd).
  if (auto st = ep.add(s.fd, EPOLLOUT | EPOLLONESHOT, ev_tag); !st) {
    close_probe_fd(s);
    Counters::inc(ctr.send_errors);
  }
}

void Prober::Impl::recycle_probe_fd(int fd, int family_index) {
  auto& spare = tcp_spare[family_index & 1];
  sockaddr unspec{};
  unspec.sa_family = AF_UNSPEC;
  if (spare.size() < kTcpSpare && tcp_open + tcp_spare[0].size() + tcp_spare[1].size() < tcp_cap &&
      ::connect(fd, &unspec, sizeof unspec) == 0) {
    // The disconnect leaves ECONNRESET pending on the socket, which would end its next connect's
    // wait at once (EPOLLERR); reading SO_ERROR clears it.
    (void)net::socket_error(fd);
    spare.emplace_back(fd);
    return;
  }
  ::close(fd);  // also leaves epoll
}

void Prober::Impl::tcp_connected(uint64_t seq) {
  Slot* s = table.find(seq);
  if (!s || s->state != SlotState::pending || s->fd < 0) return;
  s->timing.rx_user_mono = mono_ns();
  // One call says both whether the handshake finished (established, or already closed by the peer
  // after it; anything else is refused or unreachable: no answer, lost at the deadline) and the
  // kernel's first RTT sample of the connection, its SYN -> SYN/ACK time. (SO_ERROR as well was a
  // second system call per probe.)
  tcp_info info{};
  socklen_t len = sizeof info;
  if (getsockopt(s->fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
      (info.tcpi_state != TCP_ESTABLISHED && info.tcpi_state != TCP_CLOSE_WAIT)) {
    close_probe_fd(*s);
    return;
  }
  if (info.tcpi_rtt > 0) s->timing.kernel_rtt_ns = static_cast<int64_t>(info.tcpi_rtt) * 1000;
  s->state = SlotState::answered;
  finalize(*s);
}

}  // namespace weft::probe
