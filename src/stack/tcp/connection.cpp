// A TCP connection (connection.hpp): its set-up (active open, passive open, SYN cookies), the
// options it offers and takes, the application's calls (send, recv, close), the timers' dispatch
// (poll) and its end. What it sends is output.cpp, what it receives input.cpp, loss recovery
// recovery.cpp (with rack.cpp and dsack.cpp), ICMP errors icmp.cpp.
#include "stack/tcp/connection.hpp"

#include <algorithm>

#include "stack/tcp/syn_cookie.hpp"

namespace weft::stack::tcp {

namespace {
// Linux's floor for the send MSS before options (TCP_MIN_SND_MSS, net.ipv4.tcp_min_snd_mss): an
// MSS option of 1 gives 48-byte segments (36 with timestamps), not one byte each.
constexpr uint32_t kMinMss = 48;
using namespace wire::tcpflag;
}  // namespace

const char* to_string(State s) {
  switch (s) {
    case State::closed:
      return "CLOSED";
    case State::syn_sent:
      return "SYN-SENT";
    case State::syn_received:
      return "SYN-RECEIVED";
    case State::established:
      return "ESTABLISHED";
    case State::fin_wait_1:
      return "FIN-WAIT-1";
    case State::fin_wait_2:
      return "FIN-WAIT-2";
    case State::close_wait:
      return "CLOSE-WAIT";
    case State::closing:
      return "CLOSING";
    case State::last_ack:
      return "LAST-ACK";
    case State::time_wait:
      return "TIME-WAIT";
  }
  return "?";
}

const char* to_string(CloseReason r) {
  switch (r) {
    case CloseReason::none:
      return "none";
    case CloseReason::refused:
      return "refused";
    case CloseReason::reset:
      return "reset";
    case CloseReason::timeout:
      return "timeout";
    case CloseReason::aborted:
      return "aborted";
    case CloseReason::unreachable:
      return "unreachable";
  }
  return "?";
}

Connection::Connection(const Config& cfg, const Clock& clock, SegmentSink& sink, const FourTuple& tuple,
                       uint32_t iss)
    : cfg_(cfg),
      clock_(clock),
      sink_(sink),
      tuple_(tuple),
      iss_(iss),
      snd_una_(iss),
      snd_nxt_(iss),
      snd_max_(iss),
      snd_ring_(cfg.send_buffer),
      rcv_ring_(cfg.recv_buffer),
      // A record per segment: room for a full send buffer of 512-byte segments (full-sized ones
      // need a third of that), allocated once.
      sent_(cfg.send_buffer / 512 + 64),
      rack_min_rtt_ns_(kNever),
      rack_fack_(iss),
      ts_offset_(ts_offset_for(iss)),
      cc_(cfg.congestion_control),
      recover_(iss),
      rto_(cfg.rto),
      rtx_deadline_(kNever),
      tlp_deadline_(kNever),
      rack_deadline_(kNever),
      delack_deadline_(kNever),
      persist_deadline_(kNever),
      keepalive_deadline_(kNever),
      time_wait_deadline_(kNever) {
  rcv_wscale_ = rcv_wscale_for(cfg_);
}

uint8_t Connection::rcv_wscale_for(const Config& cfg) {
  uint8_t ws = 0;
  if (cfg.window_scaling)
    while ((size_t{cfg.recv_buffer} >> ws) > 65535 && ws < 14) ++ws;
  return ws;
}

bool Connection::synchronized() const {
  return state_ != State::closed && state_ != State::syn_sent && state_ != State::syn_received;
}

bool Connection::connected() const { return synchronized(); }

uint32_t Connection::now_ts() const { return static_cast<uint32_t>(clock_.now_ns() / kMs) + ts_offset_; }

uint32_t Connection::rcv_window() const {
  return static_cast<uint32_t>(std::min<size_t>(rcv_ring_.free(), size_t{65535} << rcv_wscale_));
}

uint16_t Connection::window_field() {
  uint32_t right = rcv_nxt_ + rcv_window();
  // Receiver silly-window avoidance (RFC 9293 3.8.6.2.2): move the right edge only by at least
  // min(buffer / 2, MSS); and never shrink it (RFC 9293 3.8.6).
  const uint32_t step = std::min<uint32_t>(cfg_.recv_buffer / 2, cfg_.mss);
  if (seq_le(right, rcv_adv_) || (seq_ge(rcv_adv_, rcv_nxt_) && right - rcv_adv_ < step))
    right = seq_max(rcv_adv_, rcv_nxt_);
  const uint32_t win = right - rcv_nxt_;
  uint32_t field = win >> rcv_wscale_;
  if (seq_lt(rcv_nxt_ + (field << rcv_wscale_), rcv_adv_))
    field = (win + (1u << rcv_wscale_) - 1) >> rcv_wscale_;
  field = std::min<uint32_t>(field, 65535);
  rcv_adv_ = seq_max(rcv_adv_, rcv_nxt_ + (field << rcv_wscale_));
  return static_cast<uint16_t>(field);
}

void Connection::apply_syn_options(const wire::TcpOptions& o) {
  // No MSS option, or one of 0 (Linux's tcp_parse_options ignores it): RFC 9293's default 536.
  const uint32_t peer = o.has_mss && o.mss != 0 ? o.mss : 536;
  smss_ = std::max<uint32_t>(std::min<uint32_t>(peer, cfg_.mss), kMinMss);
  if (cfg_.window_scaling && o.has_wscale) {
    ws_on_ = true;
    snd_wscale_ = std::min<uint8_t>(o.wscale, 14);  // RFC 7323 2.3
  } else {
    snd_wscale_ = 0;
    rcv_wscale_ = 0;
  }
  sack_on_ = cfg_.sack && o.sack_permitted;
  peer_offered_ts_ = o.has_timestamps;
  ts_on_ = cfg_.timestamps && o.has_timestamps;
  if (ts_on_) {
    ts_recent_ = o.ts_val;
    smss_ -= 12;  // every segment carries 12 bytes of timestamp option (as Linux's mss_cache)
  }
}

void Connection::fill_options(wire::TcpHeader& h, bool syn) {
  h.options = {};
  if (syn) {
    const bool active = state_ == State::syn_sent || state_ == State::closed;
    h.options.has_mss = true;
    h.options.mss = cfg_.mss;
    if (active ? cfg_.window_scaling : ws_on_) {
      h.options.has_wscale = true;
      h.options.wscale = rcv_wscale_;
    }
    if (active ? cfg_.timestamps : ts_on_) {
      h.options.has_timestamps = true;
      h.options.ts_val = now_ts();
      h.options.ts_ecr = active ? 0 : ts_recent_;
    }
    h.options.sack_permitted = active ? cfg_.sack : sack_on_;
    return;
  }
  if (ts_on_) {
    h.options.has_timestamps = true;
    h.options.ts_val = now_ts();
    h.options.ts_ecr = ts_recent_;
  }
  if (sack_on_ && (dsack_pending_ || !ooo_.empty())) {
    // RFC 2018 4: the first block holds the segment that arrived last; then the others, highest
    // first (the sender has the lower ones from earlier ACKs, and holes near snd_una are filled
    // first). As many as fit: 3 next to timestamps, 4 without. A duplicate goes before them all,
    // once (RFC 2883 4), followed by the block that holds it when it lies above rcv_nxt.
    const size_t max_blocks = ts_on_ ? 3 : 4;
    size_t held = ooo_.count();
    if (dsack_pending_) {
      h.options.sack[h.options.sack_count++] = {dsack_.left, dsack_.right};
      held = ooo_.covering(dsack_.left, dsack_.right);
      if (held < ooo_.count()) h.options.sack[h.options.sack_count++] = {ooo_[held].left, ooo_[held].right};
      dsack_pending_ = false;
      ++stats_.dsacks_sent;
    }
    if (!ooo_.empty()) {
      const size_t first = ooo_.last_added();
      if (first != held && h.options.sack_count < max_blocks)
        h.options.sack[h.options.sack_count++] = {ooo_[first].left, ooo_[first].right};
      for (size_t k = ooo_.count(); k-- > 0 && h.options.sack_count < max_blocks;)
        if (k != first && k != held) h.options.sack[h.options.sack_count++] = {ooo_[k].left, ooo_[k].right};
    }
  }
}

void Connection::terminate(CloseReason why) {
  state_ = State::closed;
  reason_ = why;
  rtx_deadline_ = tlp_deadline_ = rack_deadline_ = delack_deadline_ = persist_deadline_ =
      keepalive_deadline_ = time_wait_deadline_ = kNever;
}

void Connection::enter_time_wait() {
  state_ = State::time_wait;
  rtx_deadline_ = tlp_deadline_ = rack_deadline_ = persist_deadline_ = keepalive_deadline_ = kNever;
  time_wait_deadline_ = clock_.now_ns() + 2 * cfg_.msl_ns;
  // Everything we sent is acknowledged and nothing more can arrive: the rings and the send log
  // go back now rather than after 2 MSL (as Linux keeps only a small timewait socket). A server
  // that closes first would otherwise hold two ring buffers per connection it served in the last
  // minute (nginx with `Connection: close`: thousands), each allocation a fresh mmap.
  snd_ring_.release_if_empty();
  rcv_ring_.release_if_empty();
  sent_.release_if_empty();
}

void Connection::connect() {
  Notify notify{*this};
  if (state_ != State::closed || reason_ != CloseReason::none) return;
  send_syn(false);
  state_ = State::syn_sent;
  snd_nxt_ = snd_max_ = iss_ + 1;
  rtt_active_ = true;
  rtt_seq_ = iss_;
  rtt_start_ns_ = clock_.now_ns();
  arm_rtx();
}

void Connection::accept_syn(const wire::TcpSegment& s) {
  Notify notify{*this};
  irs_ = s.h.seq;
  rcv_nxt_ = irs_ + 1;
  apply_syn_options(s.h.options);
  snd_wnd_ = max_snd_wnd_ = s.h.window;  // a SYN's window is never scaled
  snd_wl1_ = s.h.seq;
  snd_wl2_ = iss_;
  state_ = State::syn_received;
  send_syn(true);
  snd_nxt_ = snd_max_ = iss_ + 1;
  rtt_active_ = true;
  rtt_seq_ = iss_;
  rtt_start_ns_ = clock_.now_ns();
  arm_rtx();
}

void Connection::accept_cookie(const wire::TcpSegment& a, uint16_t mss, const CookieOptions& o) {
  {
    Notify notify{*this};
    irs_ = a.h.seq - 1;
    rcv_nxt_ = a.h.seq;
    wire::TcpOptions syn;  // the peer's SYN as far as the cookie kept it
    syn.has_mss = true;
    syn.mss = mss;
    syn.has_wscale = o.wscale_ok;
    syn.wscale = o.wscale;
    syn.sack_permitted = o.sack;
    syn.has_timestamps = o.timestamps;
    syn.ts_val = a.h.options.ts_val;
    apply_syn_options(syn);
    snd_wl1_ = irs_;
    snd_wl2_ = iss_;
    state_ = State::syn_received;
    snd_nxt_ = snd_max_ = iss_ + 1;
    // The window the cookie's SYN-ACK announced (never scaled in a SYN).
    rcv_adv_ = rcv_nxt_ + static_cast<uint32_t>(std::min<size_t>(cfg_.recv_buffer, 65535));
    last_ack_sent_ = rcv_nxt_;  // the SYN-ACK's: the ACK's TSval becomes TS.Recent (RFC 7323 4.3)
  }
  input(a);
}

bool Connection::may_queue_data() const {
  return !fin_queued_ && (synchronized() || state_ == State::syn_sent || state_ == State::syn_received) &&
         state_ != State::time_wait;
}

size_t Connection::send(wire::Bytes data) {
  Notify notify{*this};
  if (!may_queue_data()) return 0;
  const size_t n = snd_ring_.push(data);
  output();
  return n;
}

std::pair<wire::MutBytes, wire::MutBytes> Connection::send_reserve() {
  if (!may_queue_data()) return {};
  return snd_ring_.reserve();
}

size_t Connection::send_commit(size_t n) {
  Notify notify{*this};
  if (!may_queue_data()) return 0;
  n = std::min(n, snd_ring_.free());
  snd_ring_.commit(n);
  output();
  return n;
}

size_t Connection::recv(wire::MutBytes out) {
  Notify notify{*this};
  const uint32_t before = rcv_adv_;
  const size_t n = rcv_ring_.pop(out);
  after_read(n, before);
  return n;
}

void Connection::consume(size_t n) {
  Notify notify{*this};
  const uint32_t before = rcv_adv_;
  n = std::min(n, rcv_ring_.size());
  rcv_ring_.consume(n);
  after_read(n, before);
}

void Connection::after_read(size_t n, uint32_t before) {
  if (ooo_.empty()) rcv_ring_.rewind_if_empty();  // out-of-order data sits relative to the tail
  if (n > 0 && synchronized() && !fin_received_) {
    // Window update when the right edge can move by enough (receiver SWS avoidance), and only
    // while the window the peer holds is small enough that it may be waiting for more (under 4
    // full segments: it then sends less than two ACKs' worth). A peer with a larger window keeps
    // sending and learns the new edge from the ACKs its data draws; a request/response peer
    // learns it from the response. Else every new connection's first read drew a bare ACK (the
    // SYN announced at most 64 KiB, the ring is larger) just before the response that would carry
    // it: an extra frame per request for a server that takes a connection per request.
    const uint32_t right = rcv_nxt_ + rcv_window();
    const uint32_t peer_has = seq_gt(before, rcv_nxt_) ? before - rcv_nxt_ : 0;
    if (seq_gt(right, before) && right - before >= std::min<uint32_t>(cfg_.recv_buffer / 2, cfg_.mss) &&
        peer_has < 4 * cfg_.mss) {
      ack_now_ = true;
      output();
    }
  }
}

void Connection::set_keepalive(bool on, int64_t idle_ns, int64_t interval_ns, int probes) {
  Notify notify{*this};
  cfg_.keepalive = on;
  cfg_.keepalive_idle_ns = idle_ns;
  cfg_.keepalive_interval_ns = interval_ns;
  cfg_.keepalive_probes = probes;
  keepalive_sent_ = 0;
  last_heard_ns_ = clock_.now_ns();
  keepalive_deadline_ =
      on && synchronized() && state_ != State::time_wait ? last_heard_ns_ + idle_ns : kNever;
}

void Connection::close() {
  Notify notify{*this};
  switch (state_) {
    case State::syn_sent:
      terminate(CloseReason::none);
      return;
    case State::syn_received:
      fin_queued_ = true;  // FIN-WAIT-1 once the handshake completes
      return;
    case State::established:
      fin_queued_ = true;
      state_ = State::fin_wait_1;
      output();
      return;
    case State::close_wait:
      fin_queued_ = true;
      state_ = State::last_ack;
      output();
      return;
    default:
      return;
  }
}

void Connection::abort() {
  Notify notify{*this};
  if (state_ == State::closed) return;
  if (state_ != State::syn_sent && state_ != State::time_wait) {
    wire::TcpHeader h;
    h.seq = acceptable_seq();  // an RST outside the window is ignored too (RFC 5961 3.2)
    h.flags = rst | ack;
    emit(h, {}, {});
  }
  terminate(CloseReason::aborted);
}

void Connection::poll() {
  const Clock::Hold hold(clock_);
  Notify notify{*this};
  const int64_t now = clock_.now_ns();
  if (rtx_deadline_ <= now) {
    rtx_deadline_ = kNever;
    on_rtx_timeout();
  }
  if (state_ == State::closed) return;
  if (tlp_deadline_ <= now) on_tlp();
  if (rack_deadline_ <= now) {
    rack_deadline_ = kNever;
    rack_after_detect(rack_detect_loss());
    output();
  }
  if (delack_deadline_ <= now) {
    delack_deadline_ = kNever;
    ack_now_ = true;
    output();
  }
  if (persist_deadline_ <= now) {
    if (snd_wnd_ == 0 && snd_ring_.size() > snd_nxt_ - snd_una_) {
      ++stats_.window_probes;
      send_probe();
      if (persist_backoff_ < 30) ++persist_backoff_;
      int64_t wait = rto_.rto_ns();
      for (int i = 0; i < persist_backoff_ && wait < cfg_.persist_max_ns; ++i) wait *= 2;
      persist_deadline_ = now + std::min(wait, cfg_.persist_max_ns);
    } else {
      persist_deadline_ = kNever;
    }
  }
  if (keepalive_deadline_ <= now) {
    if (keepalive_sent_ == 0 && now - last_heard_ns_ < cfg_.keepalive_idle_ns) {
      keepalive_deadline_ = last_heard_ns_ + cfg_.keepalive_idle_ns;  // heard since it was set: not idle yet
    } else {
      if (keepalive_sent_ >= cfg_.keepalive_probes) return terminate(CloseReason::timeout);
      ++keepalive_sent_;
      send_probe();
      keepalive_deadline_ = now + cfg_.keepalive_interval_ns;
    }
  }
  if (time_wait_deadline_ <= now) terminate(CloseReason::none);
}

int64_t Connection::next_deadline() const {
  return std::min({rtx_deadline_, tlp_deadline_, rack_deadline_, delack_deadline_, persist_deadline_,
                   keepalive_deadline_, time_wait_deadline_});
}

bool reset_for(const wire::TcpSegment& s, wire::TcpHeader& out) {
  if (s.h.flags & rst) return false;
  out = {};
  out.src_port = s.h.dst_port;
  out.dst_port = s.h.src_port;
  if (s.h.flags & ack) {
    out.seq = s.h.ack;
    out.flags = rst;
  } else {
    out.seq = 0;
    out.ack = s.h.seq + s.seg_len();
    out.flags = rst | ack;
  }
  return true;
}

}  // namespace weft::stack::tcp
