// The responder's TCP side: accepting connections within the cap, reaping idle ones, echoing probe
// frames on kept-open connections and sending their follow-up frames (stream_followups.hpp).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <span>

#include "base/clock.hpp"
#include "base/log.hpp"
#include "net/frame_reader.hpp"
#include "net/stream_timestamps.hpp"
#include "net/timestamping.hpp"
#include "probe/ip/responder_impl.hpp"
#include "probe/wire.hpp"

namespace weft::probe {

void Responder::Impl::close_conn(int fd) {
  ep.remove(fd);
  auto it = conns.find(fd);
  if (it == conns.end()) return;
  if (it->second->listed) echo_conns.erase(std::find(echo_conns.begin(), echo_conns.end(), fd));
  conns.erase(it);  // closes it
}

size_t Responder::Impl::reap_idle(int64_t idle_before, size_t max) {
  size_t closed = 0;
  if (max == 0) {
    for (auto it = conns.begin(); it != conns.end();) {
      const int fd = it->first;
      const bool idle = it->second->last_active_ns < idle_before && !it->second->listed;
      ++it;  // close_conn erases fd's entry
      if (idle) {
        close_conn(fd);
        ++closed;
      }
    }
  } else {
    for (; closed < max; ++closed) {
      int oldest = -1;
      int64_t oldest_ns = idle_before;
      for (const auto& [fd, c] : conns)
        if (c->last_active_ns < oldest_ns && !c->listed) {
          oldest = fd;
          oldest_ns = c->last_active_ns;
        }
      if (oldest < 0) break;
      close_conn(oldest);
    }
  }
  inc(tcp_reaped, closed);
  return closed;
}

void Responder::Impl::accept_all() {
  bool replaced_tried = false;
  for (int i = 0; i < 256; ++i) {
    int fd = accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors (the cap leaves room, but other parts of the process use them too):
      // the connection stays in the backlog; nothing to do until one closes.
      return;
    }
    inc(tcp_accepted);
    const int64_t now = mono_ns();
    if (conns.size() >= conn_cap) {
      // One scan per accept burst: a flood of connections cannot make each accept cost O(n).
      if (!replaced_tried) {
        replaced_tried = true;
        reap_idle(now - 5'000'000'000, 16);
      }
      if (conns.size() >= conn_cap) {
        ::close(fd);
        inc(tcp_refused);
        if (now - refused_logged_ns > 60'000'000'000) {
          refused_logged_ns = now;
          log().warn("responder: {} TCP connections open (the cap) and none idle for 5 s: refusing new ones",
                     conns.size());
        }
        continue;
      }
    }
    auto c = std::make_unique<Conn>();
    c->fd.reset(fd);
    c->last_active_ns = now;
    // Receive stamps before any data can come; the rest only once it is a kept-open connection
    // (connect probes are reset at once and cost no more system calls than that).
    (void)net::enable_timestamping(fd, false);
    if (!ep.add(fd, EPOLLIN | EPOLLRDHUP, tag(kConn, static_cast<uint64_t>(fd)))) continue;
    conns.emplace(fd, std::move(c));
  }
}

bool Responder::Impl::send_frame(Conn& c, const wire::Packet& p, bool stamp) {
  uint8_t out[wire::kSize];
  wire::encode(p, std::span<uint8_t, wire::kSize>(out, wire::kSize));
  iovec iov{out, sizeof out};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(cmsghdr) char ctrl[64];
  if (!stamp && c.tx_stamps && stream_nostamp_ok) {
    mh.msg_control = ctrl;
    mh.msg_controllen = net::write_no_tx_timestamp(ctrl, sizeof ctrl);
  }
  // MSG_EOR: nothing written later joins this frame's packet (autocorking would merge a burst
  // of frames, and a packet carries one transmit stamp, the last request's).
  constexpr int kFlags = MSG_NOSIGNAL | MSG_DONTWAIT | MSG_EOR;
  ssize_t n = ::sendmsg(c.fd.get(), &mh, kFlags);
  if (n < 0 && errno == EINVAL && mh.msg_controllen != 0) {  // a kernel without per-send flags on TCP
    stream_nostamp_ok = false;
    mh.msg_control = nullptr;
    mh.msg_controllen = 0;
    n = ::sendmsg(c.fd.get(), &mh, kFlags);
  }
  if (n != static_cast<ssize_t>(sizeof out)) return false;
  c.keys.wrote_frame();  // every byte moves the OPT_ID counter, stamped or not
  return true;
}

void Responder::Impl::conn_event(int fd, uint32_t events) {
  auto it = conns.find(fd);
  if (it == conns.end()) return;
  Conn& c = *it->second;
  if (events & EPOLLIN) c.last_active_ns = mono_ns();
  size_t stamps = 0;
  if ((events & EPOLLERR) && c.tx_stamps) {
    stamps = read_stream_stamps(c);
    next_stream_followup = std::min(next_stream_followup, c.echoes.next_due());
  }
  // EPOLLERR with no stamp waiting is a real error: reading reports it and closes.
  if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)) || ((events & EPOLLERR) && stamps == 0)) conn_readable(c);
}

size_t Responder::Impl::read_stream_stamps(Conn& c) {
  return net::read_tx_timestamps(c.fd.get(),
                                 [&](const net::TxTimestamp& ts) { c.echoes.stamped(ts.id, ts.time); });
}

void Responder::Impl::stream_setup(Conn& c) {
  c.kept_open = true;
  // Each frame its own packet: Nagle would hold a follow-up until the reply is acknowledged
  // (the prober's delayed ACK: tens of ms) and merge frames, which share one transmit stamp.
  int one = 1;
  setsockopt(c.fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // Nothing has been written yet: the OPT_ID byte counter starts at the first reply.
  c.tx_stamps = cfg.followups && net::enable_stream_timestamping(c.fd.get()).has_value();
}

void Responder::Impl::conn_readable(Conn& c) {
  const int fd = c.fd.get();
  bool echoed = false;
  const bool open = net::read_frames<wire::kSize>(
      fd, c.buf, sizeof c.buf, c.len,
      [&](std::span<const uint8_t, wire::kSize> frame, const net::KernelTime& rx) {
        wire::Packet p;
        if (wire::decode(frame, p) != wire::ParseError::ok || p.type != wire::Type::probe) {
          inc(malformed);  // a stream out of step cannot be trusted any more
          return false;
        }
        if (!c.kept_open) stream_setup(c);
        // Two-step only for a prober that reads follow-up frames, and while there is room to
        // remember the echo (bounded); otherwise the reply is final, with its user send time.
        const bool two_step = c.tx_stamps && wire::stream_followups_ok(p.session) && !c.echoes.full();
        p.type = wire::Type::reply;
        p.flags = static_cast<uint8_t>((rx.software_ns ? wire::kRxKernel : 0) |
                                       (two_step ? wire::kFollowupComing : 0));
        p.responder_rx_ns = rx.software_ns ? rx.software_ns : realtime_ns();
        // Waiting follow-ups go before this reply, never right after it (stream_followups.hpp).
        if (!c.echoes.empty() && !send_followups(c, mono_ns(), true)) return false;
        const uint32_t key = c.keys.next_key();
        p.responder_tx_ns = realtime_ns();
        if (!send_frame(c, p, two_step)) return false;
        inc(answered);
        if (two_step) {
          StreamEcho e;
          e.key = key;
          e.session = p.session;
          e.seq = p.seq;
          e.prober_tx_ns = p.prober_tx_ns;
          e.rx = rx;
          e.reply_rx_ns = p.responder_rx_ns;
          e.sent_mono = mono_ns();
          c.echoes.push(e);
          echoed = true;
        }
        return true;
      });
  if (!open) {
    close_conn(fd);
    return;
  }
  if (echoed) {
    // The kernel usually has the replies' send stamps already (a driver stamps as it takes the
    // packet): reading them now times the follow-ups from the replies, not from a later wake-up.
    read_stream_stamps(c);
    if (!c.listed) {
      c.listed = true;
      echo_conns.push_back(fd);
    }
  }
  if (c.listed) next_stream_followup = std::min(next_stream_followup, c.echoes.next_due());
}

bool Responder::Impl::send_followups(Conn& c, int64_t now, bool before_reply) {
  if (c.echoes.waiting_for_stamp()) read_stream_stamps(c);
  while (const StreamEcho* e = c.echoes.due(now, before_reply)) {
    wire::Packet f;
    f.type = wire::Type::followup;
    f.session = e->session;
    f.seq = e->seq;
    f.prober_tx_ns = e->prober_tx_ns;
    const bool have =
        followup_times(e->rx, e->reply_rx_ns, e->tx, f.flags, f.responder_rx_ns, f.responder_tx_ns);
    c.echoes.pop();
    if (!have) {  // no send stamp came: nothing to tell
      inc(unstamped);
      continue;
    }
    if (!send_frame(c, f, false)) return false;
    inc(followups);
  }
  return true;
}

void Responder::Impl::stream_followups(int64_t now) {
  if (now < next_stream_followup) return;
  next_stream_followup = INT64_MAX;
  for (size_t i = 0; i < echo_conns.size();) {
    const int fd = echo_conns[i];
    Conn& c = *conns.find(fd)->second;
    if (!send_followups(c, now, false)) {
      close_conn(fd);  // takes it off echo_conns: look at index i again
      continue;
    }
    if (c.echoes.empty()) {
      c.listed = false;
      echo_conns[i] = echo_conns.back();
      echo_conns.pop_back();
      continue;
    }
    next_stream_followup = std::min(next_stream_followup, c.echoes.next_due());
    ++i;
  }
}

}  // namespace weft::probe
