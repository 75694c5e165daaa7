#include "stack/tcp/tcp_layer.hpp"

#include <algorithm>
#include <limits>

namespace weft::stack::tcp {

TcpLayer::TcpLayer(const Config& cfg, const Clock& clock, SegmentSink& sink, uint64_t s0, uint64_t s1)
    : cfg_(cfg), clock_(clock), sink_(sink), isn_(s0, s1) {}

Status TcpLayer::listen(uint16_t port, size_t backlog) {
  if (port == 0) return fail("listen: port 0");
  if (listeners_.contains(port)) return fail("listen: port {} already has a listener", port);
  listeners_[port].backlog = std::max<size_t>(backlog, 1);
  return {};
}

Connection* TcpLayer::accept(uint16_t port) {
  auto it = listeners_.find(port);
  if (it == listeners_.end() || it->second.ready.empty()) return nullptr;
  Connection* c = it->second.ready.front();
  it->second.ready.pop_front();
  return c;
}

Result<Connection*> TcpLayer::connect(wire::Ipv4Addr local_ip, wire::Ipv4Addr remote_ip,
                                      uint16_t remote_port) {
  for (int tries = 0; tries < 16384; ++tries) {
    const uint16_t port = next_port_;
    next_port_ = next_port_ == 65535 ? 49152 : static_cast<uint16_t>(next_port_ + 1);
    const FourTuple t{local_ip, port, remote_ip, remote_port};
    if (conns_.contains(t) || listeners_.contains(port)) continue;
    Entry& e = conns_[t];
    e.conn = std::make_unique<Connection>(cfg_, clock_, sink_, t, isn_.isn(t, clock_.now_ns()));
    e.conn->connect();
    ++stats_.connections_made;
    return e.conn.get();
  }
  return fail("connect: no free ephemeral port to {}:{}", remote_ip.v, remote_port);
}

void TcpLayer::input(wire::Ipv4Addr src, wire::Ipv4Addr dst, const wire::TcpSegment& seg) {
  const FourTuple t{dst, seg.h.dst_port, src, seg.h.src_port};
  if (auto it = conns_.find(t); it != conns_.end()) {
    it->second.conn->input(seg);
    after_input(it->second);
    return;
  }
  const uint8_t f = seg.h.flags;
  auto lit = listeners_.find(seg.h.dst_port);
  if (lit != listeners_.end() && (f & wire::tcpflag::syn) &&
      !(f & (wire::tcpflag::ack | wire::tcpflag::rst))) {
    Listener& l = lit->second;
    if (l.half_open + l.ready.size() >= l.backlog) {
      ++stats_.syns_dropped;  // the peer retransmits its SYN; nothing is allocated for it
      return;
    }
    Entry& e = conns_[t];
    e.listener = seg.h.dst_port;
    e.conn = std::make_unique<Connection>(cfg_, clock_, sink_, t, isn_.isn(t, clock_.now_ns()));
    e.conn->accept_syn(seg);
    ++l.half_open;
    ++stats_.connections_made;
    return;
  }
  wire::TcpHeader rst;
  if (reset_for(seg, rst)) {
    ++stats_.resets_sent;
    sink_.send_segment(t, rst, {}, {});
  }
}

void TcpLayer::after_input(Entry& e) {
  if (e.listener == 0 || e.queued) return;
  auto lit = listeners_.find(e.listener);
  if (lit == listeners_.end()) return;
  if (e.conn->connected()) {
    e.queued = true;
    --lit->second.half_open;
    lit->second.ready.push_back(e.conn.get());
  } else if (e.conn->is_closed()) {
    e.queued = true;  // never reached the queue: the listener no longer counts it
    e.released = true;
    --lit->second.half_open;
  }
}

void TcpLayer::poll() {
  for (auto& [t, e] : conns_) {
    if (e.conn->next_deadline() <= clock_.now_ns()) {
      e.conn->poll();
      after_input(e);
    }
  }
  reap();
}

void TcpLayer::reap() {
  std::erase_if(conns_, [](const auto& kv) { return kv.second.released && kv.second.conn->is_closed(); });
}

int64_t TcpLayer::next_deadline() const {
  int64_t d = std::numeric_limits<int64_t>::max();
  for (const auto& [t, e] : conns_) d = std::min(d, e.conn->next_deadline());
  return d;
}

void TcpLayer::release(Connection* c) {
  if (c == nullptr) return;
  auto it = conns_.find(c->tuple());
  if (it == conns_.end()) return;
  it->second.released = true;
  // A connection still queued for accept() is dropped from the queue with it.
  if (it->second.listener != 0) {
    if (auto lit = listeners_.find(it->second.listener); lit != listeners_.end())
      std::erase(lit->second.ready, c);
  }
  reap();
}

}  // namespace weft::stack::tcp
