// TCP connect probes: one non-blocking connect per probe, timed by the kernel's first RTT
// sample of the connection (its SYN -> SYN/ACK time).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "base/log.hpp"
#include "probe/ip/prober_impl.hpp"

namespace weft::probe {

void Prober::Impl::tcp_start(uint32_t tindex, TargetState& t) {
  const int64_t tx_mono = mono_ns();
  Slot& s = new_slot(tindex, t, tx_mono);
  if (tcp_open >= tcp_cap) {
    Counters::inc(ctr.send_errors);
    mark_unsent(s, fmt::format("{} TCP connect probes already open (the cap)", tcp_cap));
    return;  // stays pending until its deadline, counted in no window
  }
  auto fd = net::tcp_connect_start(bind_addr[t.sock], t.addr);
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
  if (auto st = ep.add(s.fd, EPOLLOUT, tag(kTcpConnect, s.seq)); !st) {
    close_probe_fd(s);
    Counters::inc(ctr.send_errors);
  }
}

void Prober::Impl::tcp_connected(uint64_t seq) {
  Slot* s = table.find(seq);
  if (!s || s->state != SlotState::pending || s->fd < 0) return;
  s->timing.rx_user_mono = mono_ns();
  if (net::socket_error(s->fd) != 0) {  // refused or unreachable: no answer, lost at the deadline
    close_probe_fd(*s);
    return;
  }
  tcp_info info{};
  socklen_t len = sizeof info;
  // The kernel's first RTT sample of a fresh connection is its SYN -> SYN/ACK time.
  if (getsockopt(s->fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 && info.tcpi_rtt > 0)
    s->timing.kernel_rtt_ns = static_cast<int64_t>(info.tcpi_rtt) * 1000;
  s->state = SlotState::answered;
  finalize(*s);
}

}  // namespace weft::probe
