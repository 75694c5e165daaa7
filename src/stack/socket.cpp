#include "stack/socket.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>

namespace weft::stack {

const char* to_string(SockErr e) {
  switch (e) {
    case SockErr::again:
      return "would block";
    case SockErr::reset:
      return "connection reset";
    case SockErr::refused:
      return "connection refused";
    case SockErr::timed_out:
      return "connection timed out";
    case SockErr::shut_down:
      return "connection closed for sending";
    case SockErr::bad_socket:
      return "not a socket of that kind";
    case SockErr::in_use:
      return "port in use";
    case SockErr::no_ports:
      return "no free ephemeral port";
    case SockErr::no_route:
      return "no route to host";
    case SockErr::too_big:
      return "datagram too big";
    case SockErr::unreachable:
      return "host unreachable";
    case SockErr::not_connected:
      return "no destination address";
  }
  return "?";
}

Sockets::Sockets(Interface& iface, const SocketsConfig& cfg) : iface_(iface), cfg_(cfg) {
  iface_.tcp().set_observer(this);
}

int Sockets::event_fd() {
  if (!efd_.valid()) {
    if (auto e = EventFd::create(ready_.empty() ? 0 : 1)) efd_ = std::move(*e);
    efd_set_ = efd_.valid() && !ready_.empty();
  }
  return efd_.valid() ? efd_.fd() : -1;
}

Sockets::~Sockets() {
  iface_.tcp().set_observer(nullptr);
  for (uint32_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].kind != Kind::free) close(make_id(i));
}

// ---- handles ----

Sockets::Slot* Sockets::find(SockId id) {
  const uint64_t index = (id & 0xffffffffu) - 1;
  if (index >= slots_.size()) return nullptr;
  Slot& s = slots_[index];
  if (s.kind == Kind::free || s.gen != (id >> 32)) return nullptr;
  return &s;
}

const Sockets::Slot* Sockets::find(SockId id) const { return const_cast<Sockets*>(this)->find(id); }

Sockets::Slot* Sockets::find(SockId id, Kind k) {
  Slot* s = find(id);
  return s != nullptr && s->kind == k ? s : nullptr;
}

uint32_t Sockets::alloc(Kind k) {
  uint32_t i;
  if (!free_.empty()) {
    i = free_.back();
    free_.pop_back();
  } else {
    i = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  slots_[i].kind = k;
  ++open_;
  return i;
}

void Sockets::free_slot(uint32_t i) {
  Slot& s = slots_[i];
  s.kind = Kind::free;
  s.conn = nullptr;
  s.udp.reset();
  s.want_write = false;
  s.port = 0;
  s.peer = {};
  s.peer_port = 0;
  s.udp_err = SockErr::again;
  s.gen = s.gen == UINT32_MAX ? 1 : s.gen + 1;  // old handles to this slot now miss
  free_.push_back(i);
  --open_;
}

// ---- events ----

void Sockets::mark(uint32_t i) {
  Slot& s = slots_[i];
  if (s.ready) return;
  s.ready = true;
  ready_.push_back(i);
  if (!efd_set_ && efd_.valid() && efd_.signal()) efd_set_ = true;
}

void Sockets::on_activity(tcp::Connection& c) {
  if (c.tag() == 0) return;  // not accepted yet, or released
  if (Slot* s = find(c.tag()); s != nullptr && s->conn == &c)
    mark(static_cast<uint32_t>((c.tag() & 0xffffffffu) - 1));
}

void Sockets::on_acceptable(uint16_t port) {
  if (auto it = listeners_.find(port); it != listeners_.end()) mark(it->second);
}

void Sockets::on_datagram(wire::Ipv4Addr src, uint16_t src_port, uint16_t dst_port, wire::Bytes payload) {
  auto it = udp_ports_.find(dst_port);
  if (it == udp_ports_.end()) return;
  Slot& s = slots_[it->second];
  if (s.peer_port != 0 && (src != s.peer || src_port != s.peer_port)) return;  // connected: its peer only
  if (s.udp->push(src, src_port, payload)) mark(it->second);
}

// Linux (__udp4_lib_err) reports to a connected socket the errors it counts as hard: port and
// protocol unreachable; the others only with IP_RECVERR, which this API does not have.
void Sockets::on_icmp_error(uint16_t local_port, wire::Ipv4Addr dst, uint16_t dst_port,
                            wire::IcmpErrorKind kind) {
  auto it = udp_ports_.find(local_port);
  if (it == udp_ports_.end()) return;
  Slot& s = slots_[it->second];
  if (s.peer_port == 0 || dst != s.peer || dst_port != s.peer_port) return;
  if (kind == wire::IcmpErrorKind::port_unreachable)
    s.udp_err = SockErr::refused;
  else if (kind == wire::IcmpErrorKind::proto_unreachable)
    s.udp_err = SockErr::unreachable;
  else
    return;
  mark(it->second);
}

std::optional<SockErr> Sockets::take_udp_error(Slot& s) {
  if (s.udp_err == SockErr::again) return std::nullopt;
  const SockErr e = s.udp_err;
  s.udp_err = SockErr::again;
  return e;
}

uint32_t Sockets::level(const Slot& s) const {
  switch (s.kind) {
    case Kind::listener:
      return iface_.tcp().acceptable(s.port) > 0 ? sockev::acceptable : 0;
    case Kind::udp:
      if (s.udp_err != SockErr::again) return sockev::readable | sockev::error;
      return s.udp->empty() ? 0 : sockev::readable;
    case Kind::tcp: {
      const tcp::Connection& c = *s.conn;
      uint32_t ev = 0;
      const bool failed = c.is_closed() && c.close_reason() != tcp::CloseReason::none;
      if (c.readable() > 0 || c.peer_closed() || failed) ev |= sockev::readable;
      if (c.connected() && !c.is_closed() && c.send_space() > 0) ev |= sockev::writable;
      if (c.is_closed() || c.state() == tcp::State::time_wait) ev |= sockev::hangup;
      if (failed) ev |= sockev::error;
      return ev;
    }
    case Kind::free:
      break;
  }
  return 0;
}

uint32_t Sockets::state(SockId id) const {
  const Slot* s = find(id);
  return s == nullptr ? 0 : level(*s);
}

size_t Sockets::events(std::span<SockEvent> out) {
  size_t n = 0;
  while (n < out.size() && !ready_.empty()) {
    const uint32_t i = ready_.back();
    ready_.pop_back();
    Slot& s = slots_[i];
    s.ready = false;
    if (s.kind == Kind::free) continue;
    uint32_t ev = level(s);
    // Writable is news only after the application found no room (or while a connect is pending).
    if (!s.want_write)
      ev &= ~sockev::writable;
    else if (ev & (sockev::writable | sockev::error))
      s.want_write = false;
    if (ev != 0) out[n++] = {make_id(i), ev};
  }
  if (ready_.empty() && efd_set_ && efd_.drain()) efd_set_ = false;
  return n;
}

// ---- driving ----

void Sockets::poll(size_t rx_budget) {
  poll_no_flush(rx_budget);
  iface_.flush();  // what input and timers made leaves now, not at the next batch
}

void Sockets::poll_no_flush(size_t rx_budget) {
  iface_.poll_rx(rx_budget);
  iface_.poll_timers();
}

void Sockets::wait(int64_t max_wait_ns) {
  const int64_t now = iface_.clock().now_ns();
  const int64_t wake = std::min(iface_.next_deadline(), now + std::max<int64_t>(max_wait_ns, 0));
  iface_.flush();  // what the application sent since poll() goes before we sleep
  if (const int fd = device_fd(); fd >= 0 && wake > now) {
    pollfd p[2] = {{fd, POLLIN, 0}, {device_aux_fd(), POLLIN, 0}};
    const int64_t ns = wake - now;
    const timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    ::ppoll(p, p[1].fd >= 0 ? 2 : 1, &ts, nullptr);
  }
  poll();
}

// ---- TCP ----

SockErr Sockets::conn_error(const tcp::Connection& c) const {
  switch (c.close_reason()) {
    case tcp::CloseReason::refused:
      return SockErr::refused;
    case tcp::CloseReason::timeout:
      // RFC 1122 4.2.3.9: an ICMP error seen on the way is the better answer (Linux's sk_err_soft).
      switch (c.soft_error()) {
        case wire::IcmpErrorKind::none:
        case wire::IcmpErrorKind::frag_needed:
          return SockErr::timed_out;
        case wire::IcmpErrorKind::port_unreachable:
          return SockErr::refused;
        case wire::IcmpErrorKind::net_unreachable:
          return SockErr::no_route;  // ENETUNREACH, as Linux's icmp_err_convert
        default:
          return SockErr::unreachable;
      }
    case tcp::CloseReason::unreachable:  // (a router's "no route": ENETUNREACH, as Linux)
      return c.soft_error() == wire::IcmpErrorKind::net_unreachable ? SockErr::no_route
                                                                    : SockErr::unreachable;
    case tcp::CloseReason::reset:
    case tcp::CloseReason::aborted:
      return SockErr::reset;
    case tcp::CloseReason::none:
      break;
  }
  return SockErr::shut_down;
}

std::optional<SockErr> Sockets::dead(const tcp::Connection& c) const {
  if (c.is_closed() && c.close_reason() != tcp::CloseReason::none) return conn_error(c);
  return std::nullopt;
}

SockResult<SockId> Sockets::listen(uint16_t port, size_t backlog) {
  if (port == 0 || listeners_.contains(port)) return std::unexpected(SockErr::in_use);
  if (!iface_.tcp().listen(port, backlog)) return std::unexpected(SockErr::in_use);
  const uint32_t i = alloc(Kind::listener);
  slots_[i].port = port;
  listeners_[port] = i;
  if (iface_.tcp().acceptable(port) > 0) mark(i);
  return make_id(i);
}

SockResult<SockId> Sockets::accept(SockId id) {
  const Slot* l = find(id, Kind::listener);
  if (l == nullptr) return std::unexpected(SockErr::bad_socket);
  tcp::Connection* c = iface_.tcp().accept(l->port);
  if (c == nullptr) return std::unexpected(SockErr::again);
  const uint32_t i = alloc(Kind::tcp);
  slots_[i].conn = c;
  c->set_tag(make_id(i));
  // What arrived before accept() was nobody's news yet.
  if (level(slots_[i]) & (sockev::readable | sockev::hangup)) mark(i);
  return make_id(i);
}

SockResult<SockId> Sockets::connect(wire::Ipv4Addr dst, uint16_t port) {
  if (!iface_.routable(dst)) return std::unexpected(SockErr::no_route);
  auto c = iface_.tcp().connect(iface_.ip(), dst, port);
  if (!c) return std::unexpected(SockErr::no_ports);
  const uint32_t i = alloc(Kind::tcp);
  slots_[i].conn = *c;
  slots_[i].want_write = true;  // writable (or error) says how the connect ended
  (*c)->set_tag(make_id(i));
  return make_id(i);
}

SockResult<size_t> Sockets::send(SockId id, wire::Bytes data) {
  if (Slot* u = find(id, Kind::udp); u != nullptr) {
    if (u->peer_port == 0) return std::unexpected(SockErr::not_connected);
    return sendto(id, u->peer, u->peer_port, data);
  }
  Slot* s = find(id, Kind::tcp);
  if (s == nullptr) return std::unexpected(SockErr::bad_socket);
  tcp::Connection& c = *s->conn;
  if (auto e = dead(c)) return std::unexpected(*e);
  if (!c.may_queue_data()) return std::unexpected(SockErr::shut_down);
  const size_t n = c.send(data);
  if (n < data.size()) s->want_write = true;
  if (n == 0 && !data.empty()) return std::unexpected(SockErr::again);
  return n;
}

SockResult<size_t> Sockets::recv(SockId id, wire::MutBytes out) {
  if (find(id, Kind::udp) != nullptr) {  // one datagram, cut to `out` (as recv(2) on UDP)
    auto r = recvfrom(id, out);
    if (!r) return std::unexpected(r.error());
    return std::min(r->len, out.size());
  }
  Slot* s = find(id, Kind::tcp);
  if (s == nullptr) return std::unexpected(SockErr::bad_socket);
  tcp::Connection& c = *s->conn;
  if (auto e = dead(c)) return std::unexpected(*e);
  if (c.readable() > 0) return c.recv(out);
  if (c.peer_closed() || c.is_closed()) return 0;
  return std::unexpected(SockErr::again);
}

SockResult<std::pair<wire::Bytes, wire::Bytes>> Sockets::recv_view(SockId id) {
  Slot* s = find(id, Kind::tcp);
  if (s == nullptr) return std::unexpected(SockErr::bad_socket);
  tcp::Connection& c = *s->conn;
  if (auto e = dead(c)) return std::unexpected(*e);
  if (c.readable() > 0 || c.peer_closed() || c.is_closed()) return c.recv_view();
  return std::unexpected(SockErr::again);
}

SockResult<void> Sockets::consume(SockId id, size_t n) {
  Slot* s = find(id, Kind::tcp);
  if (s == nullptr) return std::unexpected(SockErr::bad_socket);
  s->conn->consume(n);
  return {};
}

SockResult<std::pair<wire::MutBytes, wire::MutBytes>> Sockets::send_reserve(SockId id) {
  Slot* s = find(id, Kind::tcp);
  if (s == nullptr) return std::unexpected(SockErr::bad_socket);
  tcp::Connection& c = *s->conn;
  if (auto e = dead(c)) return std::unexpected(*e);
  if (!c.may_queue_data()) return std::unexpected(SockErr::shut_down);
  auto r = c.send_reserve();
  if (r.first.empty()) {
    s->want_write = true;
    return std::unexpected(SockErr::again);
  }
  return r;
}

SockResult<size_t> Sockets::send_commit(SockId id, size_t n) {
  Slot* s = find(id, Kind::tcp);
  if (s == nullptr) return std::unexpected(SockErr::bad_socket);
  tcp::Connection& c = *s->conn;
  if (auto e = dead(c)) return std::unexpected(*e);
  if (!c.may_queue_data()) return std::unexpected(SockErr::shut_down);
  return c.send_commit(n);
}

SockResult<void> Sockets::shutdown(SockId id) {
  Slot* s = find(id, Kind::tcp);
  if (s == nullptr) return std::unexpected(SockErr::bad_socket);
  s->conn->close();
  return {};
}

SockResult<void> Sockets::set_nagle(SockId id, bool on) {
  Slot* s = find(id, Kind::tcp);
  if (s == nullptr) return std::unexpected(SockErr::bad_socket);
  s->conn->set_nagle(on);
  return {};
}

SockResult<void> Sockets::set_keepalive(SockId id, bool on, int64_t idle_ns, int64_t interval_ns,
                                        int probes) {
  Slot* s = find(id, Kind::tcp);
  if (s == nullptr) return std::unexpected(SockErr::bad_socket);
  s->conn->set_keepalive(on, idle_ns, interval_ns, probes);
  return {};
}

const tcp::Connection* Sockets::connection(SockId id) const {
  const Slot* s = find(id);
  return s != nullptr && s->kind == Kind::tcp ? s->conn : nullptr;
}

// ---- UDP ----

SockResult<SockId> Sockets::udp_bind(uint16_t port) {
  auto p = iface_.udp_bind(port, this);
  if (!p) return std::unexpected(port == 0 ? SockErr::no_ports : SockErr::in_use);
  const uint32_t i = alloc(Kind::udp);
  slots_[i].port = *p;
  slots_[i].udp = std::make_unique<UdpQueue>(cfg_.udp_recv_buffer);
  udp_ports_[*p] = i;
  return make_id(i);
}

SockResult<void> Sockets::udp_connect(SockId id, wire::Ipv4Addr dst, uint16_t port) {
  Slot* s = find(id, Kind::udp);
  if (s == nullptr) return std::unexpected(SockErr::bad_socket);
  s->udp_err = SockErr::again;
  if (dst.is_unspecified()) {  // AF_UNSPEC: back to unconnected
    s->peer = {};
    s->peer_port = 0;
    return {};
  }
  if (port == 0) return std::unexpected(SockErr::not_connected);
  if (!iface_.routable(dst)) return std::unexpected(SockErr::no_route);
  s->peer = dst;
  s->peer_port = port;
  return {};
}

SockResult<size_t> Sockets::sendto(SockId id, wire::Ipv4Addr dst, uint16_t port, wire::Bytes payload) {
  Slot* s = find(id, Kind::udp);
  if (s == nullptr) return std::unexpected(SockErr::bad_socket);
  if (auto e = take_udp_error(*s)) return std::unexpected(*e);
  if (payload.size() > iface_.udp_max_payload()) return std::unexpected(SockErr::too_big);
  if (!iface_.routable(dst)) return std::unexpected(SockErr::no_route);
  if (!iface_.send_udp(s->port, dst, port, payload)) return std::unexpected(SockErr::no_route);
  return payload.size();
}

SockResult<DatagramInfo> Sockets::recvfrom(SockId id, wire::MutBytes out, bool peek) {
  Slot* s = find(id, Kind::udp);
  if (s == nullptr) return std::unexpected(SockErr::bad_socket);
  if (auto e = take_udp_error(*s)) return std::unexpected(*e);
  DatagramInfo info;
  if (!s->udp->pop(out, info, peek)) return std::unexpected(SockErr::again);
  return info;
}

// ---- any ----

void Sockets::close(SockId id) {
  Slot* s = find(id);
  if (s == nullptr) return;
  const auto i = static_cast<uint32_t>((id & 0xffffffffu) - 1);
  switch (s->kind) {
    case Kind::tcp:
      s->conn->close();
      iface_.tcp().release(s->conn);
      break;
    case Kind::listener:
      listeners_.erase(s->port);
      iface_.tcp().unlisten(s->port);
      break;
    case Kind::udp:
      udp_ports_.erase(s->port);
      iface_.udp_unbind(s->port);
      break;
    case Kind::free:
      return;
  }
  free_slot(i);
}

void Sockets::abort(SockId id) {
  if (Slot* s = find(id, Kind::tcp); s != nullptr) s->conn->abort();
  close(id);
}

SockErr Sockets::error(SockId id) const {
  const Slot* s = find(id);
  if (s == nullptr) return SockErr::bad_socket;
  if (s->kind == Kind::udp) return s->udp_err;
  if (s->kind != Kind::tcp) return SockErr::again;
  return dead(*s->conn).value_or(SockErr::again);
}

uint16_t Sockets::local_port(SockId id) const {
  const Slot* s = find(id);
  if (s == nullptr) return 0;
  return s->kind == Kind::tcp ? s->conn->tuple().local_port : s->port;
}

}  // namespace weft::stack
