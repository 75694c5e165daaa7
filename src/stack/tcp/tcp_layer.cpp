#include "stack/tcp/tcp_layer.hpp"

#include <algorithm>
#include <limits>

namespace weft::stack::tcp {

TcpLayer::TcpLayer(const Config& cfg, const Clock& clock, SegmentSink& sink, uint64_t s0, uint64_t s1)
    : cfg_(cfg),
      clock_(clock),
      sink_(sink),
      isn_(s0, s1),
      cookies_(s0, s1),
      time_wait_(cfg.max_time_wait, 2 * cfg.msl_ns) {}

TcpLayer::~TcpLayer() {
  // The connections go with the layer; none may call back into it while they are destroyed.
  for (auto& [t, e] : conns_) e.conn->set_watcher(nullptr);
  for (Entry& e : retired_) e.conn->set_watcher(nullptr);
}

Status TcpLayer::listen(uint16_t port, size_t backlog) {
  if (port == 0) return fail("listen: port 0");
  if (listeners_.contains(port)) return fail("listen: port {} already has a listener", port);
  listeners_[port].backlog = std::max<size_t>(backlog, 1);
  return {};
}

void TcpLayer::unlisten(uint16_t port) {
  auto lit = listeners_.find(port);
  if (lit == listeners_.end()) return;
  const std::deque<Connection*> ready = std::move(lit->second.ready);
  listeners_.erase(lit);
  // Rare (a listener closing), so a walk over all connections is fine here.
  busy_ = true;
  for (auto& [t, e] : conns_) {
    if (e.listener != port) continue;
    // Half-open, or established and waiting in the queue: nobody will accept it now. The rest
    // were handed out (or died half-open and are freed already) and are left alone.
    const bool waiting = !e.queued || std::find(ready.begin(), ready.end(), e.conn.get()) != ready.end();
    e.listener = 0;
    if (!waiting) continue;
    e.queued = true;
    e.conn->abort();
    release(e.conn.get());
  }
  for (Entry& e : retired_) {  // closed while waiting in the queue: nobody will accept them now
    if (e.listener == port && std::find(ready.begin(), ready.end(), e.conn.get()) != ready.end())
      e.conn->released_ = e.conn->reaping_ = true;
  }
  busy_ = false;
  reap();
}

Connection* TcpLayer::accept(uint16_t port) {
  auto it = listeners_.find(port);
  if (it == listeners_.end() || it->second.ready.empty()) return nullptr;
  Connection* c = it->second.ready.front();
  it->second.ready.pop_front();
  return c;
}

size_t TcpLayer::acceptable(uint16_t port) const {
  auto it = listeners_.find(port);
  return it == listeners_.end() ? 0 : it->second.ready.size();
}

Connection& TcpLayer::create(const FourTuple& t, Entry& e, std::optional<uint32_t> iss) {
  e.conn = std::make_unique<Connection>(cfg_, clock_, sink_, t, iss ? *iss : isn_.isn(t, clock_.now_ns()));
  e.conn->set_watcher(this);
  ++stats_.connections_made;
  return *e.conn;
}

Result<Connection*> TcpLayer::connect(wire::Ipv4Addr local_ip, wire::Ipv4Addr remote_ip,
                                      uint16_t remote_port) {
  for (int tries = 0; tries < 16384; ++tries) {
    const uint16_t port = next_port_;
    next_port_ = next_port_ == 65535 ? 49152 : static_cast<uint16_t>(next_port_ + 1);
    const FourTuple t{local_ip, port, remote_ip, remote_port};
    if (conns_.contains(t) || listeners_.contains(port) || time_wait_.contains(t, clock_.now_ns())) continue;
    Connection& c = create(t, conns_[t]);
    c.connect();
    return &c;
  }
  return fail("connect: no free ephemeral port to {}:{}", remote_ip.v, remote_port);
}

void TcpLayer::input(wire::Ipv4Addr src, wire::Ipv4Addr dst, const wire::TcpSegment& seg) {
  const FourTuple t{dst, seg.h.dst_port, src, seg.h.src_port};
  const uint8_t f = seg.h.flags;
  const bool bare_syn = (f & wire::tcpflag::syn) && !(f & (wire::tcpflag::ack | wire::tcpflag::rst));
  auto lit = listeners_.find(seg.h.dst_port);
  std::optional<uint32_t> iss;  // a new incarnation's, past the TIME-WAIT one it replaces
  auto it = conns_.find(t);
  if (it != conns_.end()) {
    Connection& c = *it->second.conn;
    if (c.is_closed() || c.reaping_) {
      // It no longer answers for its 4-tuple (as a closed socket in Linux is unhashed): closed, or
      // let go in TIME-WAIT with its wait in time_wait_ already. The segment goes on as for no
      // connection; the application may still hold it.
      detach(it);
      it = conns_.end();
    } else if (c.state_ == State::time_wait && lit != listeners_.end() &&
               time_wait_takes_syn(seg, c.rcv_nxt_, c.ts_on_, c.ts_recent_)) {
      // A TIME-WAIT the application has not let go takes a new incarnation's SYN by the same rule
      // as the compact waits below; before, it answered with a challenge ACK.
      ++stats_.time_wait_reopened;
      iss = time_wait_next_iss(c.snd_max_);
      c.terminate(CloseReason::none);  // its wait is over, as when 2 MSL have passed
      changed(c);
      if (observer_ != nullptr) observer_->on_activity(c);
      detach(it);
      it = conns_.end();
    }
  }
  if (it != conns_.end()) {
    Connection& c = *it->second.conn;
    busy_ = true;
    const bool was_held = c.ack_held_;
    c.hold_ack_ = batching_;
    c.input(seg);
    c.hold_ack_ = false;
    if (c.ack_held_ && !was_held) held_.push_back(&c);
    after_input(it->second);
    if (observer_ != nullptr) observer_->on_activity(c);
    busy_ = false;
    reap();
    return;
  }
  if (!iss && !time_wait_.empty()) {
    wire::TcpHeader ack;
    uint32_t next_iss = 0;
    switch (time_wait_.input(t, seg, clock_.now_ns(), lit != listeners_.end(), ack, next_iss)) {
      case TimeWaitTable::Verdict::absent:
        break;
      case TimeWaitTable::Verdict::dropped:
        return;
      case TimeWaitTable::Verdict::ack:
        sink_.send_segment(t, ack, {}, {});
        return;
      case TimeWaitTable::Verdict::reopen:
        ++stats_.time_wait_reopened;
        iss = next_iss;
        break;
    }
  }
  if (lit != listeners_.end() && bare_syn) {
    Listener& l = lit->second;
    if (l.ready.size() >= l.backlog) {
      ++stats_.syns_dropped;  // nobody accepts: the peer retransmits its SYN, nothing is allocated
      return;
    }
    if (l.half_open >= l.backlog) {
      send_cookie(t, seg, l);  // the SYN queue is full: the state goes out in the SYN-ACK
      return;
    }
    Entry& e = conns_[t];
    e.listener = seg.h.dst_port;
    create(t, e, iss).accept_syn(seg);
    ++l.half_open;
    return;
  }
  if (lit != listeners_.end() && (f & wire::tcpflag::ack) &&
      !(f & (wire::tcpflag::syn | wire::tcpflag::rst)) && accept_cookie(t, seg, lit->second))
    return;
  wire::TcpHeader rst;
  if (reset_for(seg, rst)) {
    ++stats_.resets_sent;
    sink_.send_segment(t, rst, {}, {});
  }
}

// The SYN-ACK Connection::accept_syn would send, with the cookie as its ISS and, with timestamps,
// the options the connection needs folded into the TSval (syn_cookie.hpp). Without timestamps it
// offers no window scaling or SACK: the cookie could not bring back whether the peer offered them.
void TcpLayer::send_cookie(const FourTuple& t, const wire::TcpSegment& syn, Listener& l) {
  const int64_t now = clock_.now_ns();
  const wire::TcpOptions& in = syn.h.options;
  const uint16_t peer_mss = in.has_mss && in.mss != 0 ? in.mss : 536;  // MSS 0 is ignored, as Linux
  const uint32_t iss = cookies_.make(t, syn.h.seq, SynCookies::mss_index(peer_mss), now);
  wire::TcpHeader h;
  h.src_port = t.local_port;
  h.dst_port = t.remote_port;
  h.seq = iss;
  h.ack = syn.h.seq + 1;
  h.flags = wire::tcpflag::syn | wire::tcpflag::ack;
  h.window = static_cast<uint16_t>(std::min<uint32_t>(cfg_.recv_buffer, 65535));
  h.options.has_mss = true;
  h.options.mss = cfg_.mss;
  if (cfg_.timestamps && in.has_timestamps) {
    CookieOptions o;
    o.timestamps = true;
    o.sack = cfg_.sack && in.sack_permitted;
    o.wscale_ok = cfg_.window_scaling && in.has_wscale;
    o.wscale = std::min<uint8_t>(in.wscale, 14);
    h.options.has_timestamps = true;
    h.options.ts_val = SynCookies::ts_encode(Connection::ts_at(now, iss), o);
    h.options.ts_ecr = in.ts_val;
    h.options.sack_permitted = o.sack;
    if (o.wscale_ok) {
      h.options.has_wscale = true;
      h.options.wscale = Connection::rcv_wscale_for(cfg_);
    }
  }
  l.last_cookie_ns = now;
  ++stats_.cookies_sent;
  sink_.send_segment(t, h, {}, {});
}

bool TcpLayer::accept_cookie(const FourTuple& t, const wire::TcpSegment& seg, Listener& l) {
  const int64_t now = clock_.now_ns();
  if (l.last_cookie_ns < 0 || now - l.last_cookie_ns >= SynCookies::kMaxAge * SynCookies::kPeriodNs)
    return false;
  const uint32_t cookie = seg.h.ack - 1;
  const int index = cookies_.check(t, seg.h.seq - 1, cookie, now);
  if (index < 0) {
    ++stats_.cookies_rejected;
    return false;
  }
  if (l.ready.size() >= l.backlog) return true;  // dropped, as a SYN would be: the peer retransmits
  CookieOptions o;
  o.timestamps = cfg_.timestamps && seg.h.options.has_timestamps;
  SynCookies::ts_decode(seg.h.options.ts_ecr, o);
  Entry& e = conns_[t];
  e.listener = seg.h.dst_port;
  ++l.half_open;  // after_input moves it to the accept queue (or frees it)
  ++stats_.cookies_accepted;
  Connection& c = create(t, e, cookie);
  busy_ = true;
  c.accept_cookie(seg, kCookieMss[index], o);
  after_input(e);
  if (observer_ != nullptr) observer_->on_activity(c);
  busy_ = false;
  reap();
  return true;
}

void TcpLayer::icmp_error(const wire::IcmpQuote& q, wire::IcmpErrorKind kind, uint16_t mtu) {
  const FourTuple t{q.src, q.src_port, q.dst, q.dst_port};
  auto it = conns_.find(t);
  if (it == conns_.end()) {
    ++stats_.icmp_no_connection;
    return;
  }
  Connection& c = *it->second.conn;
  busy_ = true;
  if (c.icmp_error(kind, q.tcp_seq, mtu, q.total_len)) {
    after_input(it->second);
    if (observer_ != nullptr) observer_->on_activity(c);
  }
  busy_ = false;
  reap();
}

void TcpLayer::after_input(Entry& e) {
  if (e.listener == 0 || e.queued) return;
  auto lit = listeners_.find(e.listener);
  if (lit == listeners_.end()) return;
  if (e.conn->connected()) {
    e.queued = true;
    --lit->second.half_open;
    lit->second.ready.push_back(e.conn.get());
    if (observer_ != nullptr) observer_->on_acceptable(e.listener);
  } else if (e.conn->is_closed()) {
    e.queued = true;  // never reached the queue: the listener no longer counts it
    --lit->second.half_open;
    release(e.conn.get());
  }
}

void TcpLayer::changed(Connection& c) {
  timers_.set(&c, c.next_deadline());
  if (c.released_ && c.state_ == State::time_wait && !c.reaping_) to_time_wait(c);
  if (c.released_ && c.is_closed() && !c.reaping_) {
    c.reaping_ = true;
    dead_.push_back(c.tuple());
  }
}

void TcpLayer::to_time_wait(Connection& c) {
  TimeWaitEntry e;
  e.snd_nxt = c.snd_max_;
  e.rcv_nxt = c.rcv_nxt_;
  e.ts_recent = c.ts_recent_;
  e.ts_offset = c.ts_offset_;
  e.ts_on = c.ts_on_;
  e.until = c.time_wait_deadline_;
  e.window = static_cast<uint16_t>(std::min<uint32_t>(
      (seq_gt(c.rcv_adv_, c.rcv_nxt_) ? c.rcv_adv_ - c.rcv_nxt_ : 0) >> c.rcv_wscale_, 65535));
  if (!time_wait_.add(c.tuple(), e, clock_.now_ns())) ++stats_.time_wait_overflow;
  // The Connection goes at the next reap(); until then (the rest of a receive batch) it answers
  // for its 4-tuple itself, as it would have.
  c.reaping_ = true;
  dead_.push_back(c.tuple());
}

void TcpLayer::poll() {
  const Clock::Hold hold(clock_);  // the due connections run at the time that found them due
  const int64_t now = clock_.now_ns();
  // Take the due connections out first: a connection's poll() puts it back with its next
  // deadline, which must wait for the next poll() even if it is already due.
  due_.clear();
  while (!timers_.empty() && timers_.top_at() <= now) {
    Connection* c = timers_.top();
    timers_.remove(c);
    due_.push_back(c);
  }
  busy_ = true;
  for (Connection* c : due_) {
    ++stats_.timer_runs;
    c->poll();
    if (auto it = conns_.find(c->tuple()); it != conns_.end()) after_input(it->second);
    if (observer_ != nullptr) observer_->on_activity(*c);
  }
  busy_ = false;
  reap();
  time_wait_.expire(now);
}

void TcpLayer::end_batch() {
  batching_ = false;
  busy_ = true;
  for (Connection* c : held_) {
    c->ack_held_ = false;
    if (!c->ack_now_) continue;  // a segment it sent since carried the ACK
    const Connection::Notify n{*c};
    c->output();
  }
  held_.clear();
  busy_ = false;
  reap();
}

void TcpLayer::detach(ConnMap::iterator it) {
  std::erase(dead_, it->first);  // reap() must not take the 4-tuple's next connection with it
  retired_.push_back(std::move(it->second));
  conns_.erase(it);
}

void TcpLayer::reap() {
  if (busy_ || batching_) return;
  std::erase_if(retired_, [this](Entry& e) {
    if (!e.conn->released_) return false;
    timers_.remove(e.conn.get());
    return true;
  });
  for (const FourTuple& t : dead_) {
    auto it = conns_.find(t);
    if (it == conns_.end()) continue;
    timers_.remove(it->second.conn.get());
    conns_.erase(it);
  }
  dead_.clear();
}

void TcpLayer::release(Connection* c) {
  if (c == nullptr) return;
  Entry* e = nullptr;
  if (auto it = conns_.find(c->tuple()); it != conns_.end() && it->second.conn.get() == c) {
    e = &it->second;
  } else {
    auto r =
        std::find_if(retired_.begin(), retired_.end(), [c](const Entry& x) { return x.conn.get() == c; });
    if (r == retired_.end()) return;
    e = &*r;
    c->reaping_ = true;  // freed from retired_, not by its 4-tuple (another connection's now)
  }
  c->released_ = true;
  c->set_tag(0);
  // A connection still queued for accept() is dropped from the queue with it.
  if (e->listener != 0) {
    if (auto lit = listeners_.find(e->listener); lit != listeners_.end()) std::erase(lit->second.ready, c);
  }
  changed(*c);
  reap();
}

}  // namespace weft::stack::tcp
