#include "stack/tcp/connection.hpp"

#include <algorithm>
#include <limits>

#include "stack/tcp/syn_cookie.hpp"

namespace weft::stack::tcp {

namespace {
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
// Linux's floor for the send MSS before options (TCP_MIN_SND_MSS, net.ipv4.tcp_min_snd_mss): an
// MSS option of 1 gives 48-byte segments (36 with timestamps), not one byte each.
constexpr uint32_t kMinMss = 48;
constexpr uint32_t kMaxCwnd = 1u << 30;
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

void Connection::send_at_nxt(uint32_t len, bool fin, bool push) {
  send_range(snd_nxt_, len, fin, push);
  snd_nxt_ += len + (fin ? 1 : 0);
  if (fin) fin_sent_ = true;
  snd_max_ = seq_max(snd_max_, snd_nxt_);
  if (rtx_deadline_ == kNever) arm_rtx();
}

uint32_t Connection::mss_now() const {
  if (!sack_on_ || (ooo_.empty() && !dsack_pending_)) return smss_;
  const size_t blocks = std::min<size_t>(ooo_.count() + (dsack_pending_ ? 1 : 0), ts_on_ ? 3 : 4);
  return smss_ - static_cast<uint32_t>(4 + 8 * blocks);  // NOP NOP kind len + 8 bytes a block
}

void Connection::send_range(uint32_t seq, uint32_t len, bool fin, bool push) {
  const auto [p1, p2] = snd_ring_.peek(seq - snd_una_, len);
  wire::TcpHeader h;
  h.seq = seq;
  h.flags = static_cast<uint8_t>(ack | (push ? psh : 0) | (fin ? wire::tcpflag::fin : 0));
  h.window = window_field();
  fill_options(h, false);
  if (rack_on() && (len > 0 || fin)) rack_log_send(seq, seq + len + (fin ? 1 : 0));
  if (seq_lt(seq, snd_max_)) {
    ++stats_.retransmits;
    rtt_active_ = false;  // Karn
    undo_note_retransmit(seq, seq_min(seq + len, snd_max_));
  } else if (!rtt_active_ && len > 0) {
    rtt_active_ = true;
    rtt_seq_ = seq;
    rtt_start_ns_ = clock_.now_ns();
  }
  const uint32_t mss = mss_now();
  emit(h, p1, p2, len > mss ? mss : 0);
}

void SegmentSink::send_super_segment(const FourTuple& t, const wire::TcpHeader& h, wire::Bytes p1,
                                     wire::Bytes p2, uint32_t seg_size) {
  const size_t total = p1.size() + p2.size();
  for (size_t off = 0; off < total;) {
    const size_t n = std::min<size_t>(seg_size, total - off);
    const bool last = off + n == total;
    wire::TcpHeader piece = h;
    piece.seq = h.seq + static_cast<uint32_t>(off);
    if (!last) piece.flags &= static_cast<uint8_t>(~(wire::tcpflag::psh | wire::tcpflag::fin));
    // The piece as a slice of p1 then p2.
    const size_t a = off < p1.size() ? std::min(n, p1.size() - off) : 0;
    const wire::Bytes q1 = a > 0 ? p1.subspan(off, a) : p2.subspan(off - p1.size(), n);
    const wire::Bytes q2 = a > 0 && a < n ? p2.subspan(0, n - a) : wire::Bytes{};
    send_segment(t, piece, q1, q2);
    off += n;
  }
}

void Connection::emit(wire::TcpHeader& h, wire::Bytes p1, wire::Bytes p2, uint32_t seg_size) {
  h.src_port = tuple_.local_port;
  h.dst_port = tuple_.remote_port;
  if (h.flags & ack) {
    h.ack = rcv_nxt_;
    last_ack_sent_ = rcv_nxt_;
    delack_deadline_ = kNever;
    segs_unacked_ = 0;
    ack_now_ = false;
  }
  const size_t len = p1.size() + p2.size();
  if (seg_size > 0 && len > seg_size) {
    stats_.segments_out += (len + seg_size - 1) / seg_size;
    sink_.send_super_segment(tuple_, h, p1, p2, seg_size);
    return;
  }
  ++stats_.segments_out;
  sink_.send_segment(tuple_, h, p1, p2);
}

void Connection::send_syn(bool with_ack) {
  wire::TcpHeader h;
  h.seq = iss_;
  h.flags = static_cast<uint8_t>(syn | (with_ack ? ack : 0));
  h.window = static_cast<uint16_t>(std::min<size_t>(rcv_ring_.free(), 65535));  // never scaled in a SYN
  fill_options(h, true);
  if (with_ack) rcv_adv_ = rcv_nxt_ + h.window;
  emit(h, {}, {});
}

// The SEQ of a segment without data (ACK, RST): one the peer finds acceptable (RFC 9293 3.10.7.4),
// or it drops the segment without reading its ACK field. The highest sequence sent, not snd_nxt
// (after a timeout snd_nxt goes back to resend, and below the peer's rcv_nxt the segment is as
// unacceptable); but never past the right edge of the peer's window: a peer that shrinks its
// window to 0 (Linux pruning its queues under memory pressure) then has its rcv_nxt below SND.MAX,
// and ACKs at SND.MAX would be dropped until nothing moves (issue 26's deadlock). Linux's
// tcp_acceptable_seq(), whose slack of one window-scale unit covers the peer rounding its window
// down when it scales it (Linux takes its own receive scale there; the peer's is the one that
// rounds, so it is the one used here).
uint32_t Connection::acceptable_seq() const {
  const uint32_t right = snd_una_ + snd_wnd_;
  if (seq_le(snd_max_, right) || (ws_on_ && snd_max_ - right < (1u << snd_wscale_))) return snd_max_;
  return right;
}

void Connection::send_ack() {
  wire::TcpHeader h;
  h.seq = acceptable_seq();
  h.flags = ack;
  h.window = window_field();
  fill_options(h, false);
  emit(h, {}, {});
}

void Connection::send_probe() {
  wire::TcpHeader h;
  h.seq = snd_una_ - 1;  // already acknowledged: the peer must answer with an ACK
  h.flags = ack;
  h.window = window_field();
  fill_options(h, false);
  emit(h, {}, {});
}

void Connection::send_rst(uint32_t seq) {
  wire::TcpHeader h;
  h.seq = seq;
  h.flags = rst;
  emit(h, {}, {});
}

void Connection::arm_rtx() { rtx_deadline_ = clock_.now_ns() + rto_.rto_ns(); }

// RFC 8985 7.2: a probe timeout of 2 SRTT (at least 2 ms: Linux adds TCP_TIMEOUT_MIN, 2 jiffies;
// a 10 ms floor is tens of round trips on the interop grid's sub-ms path), plus the peer's worst
// delayed ACK when one segment is out; none when the RTO would come first, in loss recovery, after
// a timeout or while a probe is unanswered.
void Connection::arm_tlp() {
  tlp_deadline_ = kNever;
  if (!cfg_.tail_loss_probe || !rto_.has_sample() || in_recovery_ || retries_ > 0 || tlp_out_) return;
  if (state_ != State::established && state_ != State::close_wait && state_ != State::fin_wait_1 &&
      state_ != State::closing && state_ != State::last_ack)
    return;
  const uint32_t flight = snd_max_ - snd_una_;
  if (flight == 0 || snd_wnd_ == 0) return;
  int64_t pto = std::max<int64_t>(2 * rto_.srtt_ns(), 2'000'000);
  if (flight <= smss_) pto = std::max<int64_t>(pto, rto_.srtt_ns() * 3 / 2 + 200'000'000);
  const int64_t at = clock_.now_ns() + pto;
  if (at < rtx_deadline_) tlp_deadline_ = at;
}

// RFC 8985 7.3, the "retransmit the last segment" branch (new data is not sent as the probe): the
// ACK it draws is a duplicate when something before it is missing, which early retransmit (RFC
// 5827) or fast retransmit then repairs, or acknowledges everything when only the tail was lost.
void Connection::on_tlp() {
  tlp_deadline_ = kNever;
  if (snd_max_ == snd_una_ || in_recovery_ || retries_ > 0 || !seq_ge(snd_nxt_, snd_max_)) return;
  const size_t data_out = fin_sent_ ? snd_ring_.size() : snd_max_ - snd_una_;
  const size_t len = std::min<size_t>(data_out, mss_now());
  if (len == 0 && !fin_sent_) return;
  ++stats_.tail_loss_probes;
  tlp_out_ = true;
  send_range(snd_una_ + static_cast<uint32_t>(data_out - len), static_cast<uint32_t>(len), fin_sent_,
             len > 0);
  arm_rtx();
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
  if (n > 0 && synchronized() && !fin_received_) {
    // Window update when the right edge can move by enough (receiver SWS avoidance).
    const uint32_t right = rcv_nxt_ + rcv_window();
    if (seq_gt(right, before) && right - before >= std::min<uint32_t>(cfg_.recv_buffer / 2, cfg_.mss)) {
      ack_now_ = true;
      output();
    }
  }
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

void Connection::output() {
  // One reading for the burst: every segment's send time (RTT, RACK), timestamp and timers (as
  // Linux's tcp_write_xmit refreshes tcp_clock_cache once per call), taken again every
  // kSegsPerReading segments: a long burst (a whole window after the application fills the ring)
  // takes milliseconds, which its last segments' send times and the TLP deadline armed at its end
  // must not lose.
  Clock::Hold hold(clock_);
  constexpr unsigned kSegsPerReading = 8;
  unsigned segs = 0;
  if (!synchronized() || state_ == State::time_wait) {
    if (ack_now_ && state_ == State::time_wait) send_ack();
    return;
  }
  bool sent_any = false;
  // pipe() walks the send log: taken once, then grown by the new data this loop sends (a
  // retransmission makes it walk again).
  uint32_t pipe_now = 0;
  bool pipe_known = false;
  const bool may_send_data = state_ == State::established || state_ == State::close_wait ||
                             state_ == State::fin_wait_1 || state_ == State::closing ||
                             state_ == State::last_ack;
  while (may_send_data) {
    if (rack_on()) {  // segments deemed lost go first (RFC 6675 NextSeg rule 1 by RACK's marks)
      if (rack_send_lost()) {
        pipe_known = false;
        sent_any = true;
        if (++segs % kSegsPerReading == 0) hold.refresh();
        continue;
      }
    } else if (in_recovery_ && sack_on_) {  // RFC 6675: what goes out in recovery is NextSeg's choice
      sent_any = sack_recovery_send();
      break;
    }
    const uint32_t end = data_end();
    if (fin_sent_ && seq_gt(snd_nxt_, end)) break;  // everything including the FIN is out
    // Go-back-N after a timeout skips what the peer SACKed (the scoreboard outlives the first
    // timeout; a second one clears it, RFC 2018 8, in case the receiver reneged).
    size_t sack_cap = SIZE_MAX;
    if (seq_lt(snd_nxt_, snd_max_) && !sacked_.empty()) {
      bool skipped = false;
      for (size_t k = 0; k < sacked_.count(); ++k) {
        if (seq_gt(sacked_[k].left, snd_nxt_)) {
          sack_cap = sacked_[k].left - snd_nxt_;
          break;
        }
        if (seq_lt(snd_nxt_, sacked_[k].right)) {
          snd_nxt_ = sacked_[k].right;
          skipped = true;
          break;
        }
      }
      if (skipped) continue;
    }
    const size_t off = snd_nxt_ - snd_una_;
    const size_t avail = snd_ring_.size() - off;
    const uint32_t inflight = snd_nxt_ - snd_una_;
    // RFC 3042 limited transmit: the first two dup ACKs each let one new segment out past cwnd
    // (never a retransmission), so a small window still collects the three that fast retransmit
    // needs instead of waiting for the RTO.
    // With RACK, cwnd is measured against pipe (what SACKs and loss marks say is still in the
    // network, as Linux's packets_in_flight), which lets new data out on SACKs as limited transmit
    // would.
    const uint32_t lt_allow = !rack_on() && !in_recovery_ && seq_ge(snd_nxt_, snd_max_)
                                  ? std::min<uint32_t>(dupacks_, 2) * smss_
                                  : 0;
    uint32_t usable;
    if (rack_on()) {
      if (!pipe_known) pipe_now = pipe();
      pipe_known = true;
      const uint32_t p = pipe_now;
      usable = std::min(snd_wnd_ > inflight ? snd_wnd_ - inflight : 0, cwnd_ > p ? cwnd_ - p : 0);
    } else {
      const uint32_t wnd = std::min(snd_wnd_, cwnd_ + lt_allow);
      usable = wnd > inflight ? wnd - inflight : 0;
    }
    const uint32_t mss = mss_now();
    // TSO: new data may go as one super-segment of whole MSS pieces (a partial piece only at the
    // end of the data, so sender SWS avoidance holds); retransmissions stay one MSS.
    const uint32_t cap =
        cfg_.tso_max >= 2 * mss && seq_ge(snd_nxt_, snd_max_) ? cfg_.tso_max / mss * mss : mss;
    size_t len = std::min<size_t>({avail, cap, usable, sack_cap});
    if (len > mss && len < avail) len = len / mss * mss;
    const bool fin = fin_queued_ && len == avail;
    if (len == 0 && !fin) break;
    if (len < mss && !fin && len != sack_cap) {
      if (len < avail) {
        if (inflight > 0) break;  // window-limited: wait for the window to open (sender SWS)
      } else if (cfg_.nagle && inflight > 0 && seq_ge(snd_nxt_, snd_max_)) {
        break;  // Nagle: one small segment in flight at a time (new data: a resent tail goes now)
      }
    }
    if (seq_ge(snd_nxt_, snd_max_))
      pipe_now += static_cast<uint32_t>(len) + (fin ? 1 : 0);  // a new record, in flight
    else
      pipe_known = false;  // go-back-N resends what the log already holds
    send_at_nxt(static_cast<uint32_t>(len), fin, len > 0 && len == avail);
    sent_any = true;
    if (++segs % kSegsPerReading == 0) hold.refresh();
  }
  // Zero window with data waiting and nothing in flight: probe until it opens.
  if (may_send_data && snd_wnd_ == 0 && snd_nxt_ == snd_una_ && snd_ring_.size() > 0 &&
      persist_deadline_ == kNever) {
    persist_backoff_ = 0;
    persist_deadline_ = clock_.now_ns() + rto_.rto_ns();
  }
  if (sent_any) arm_tlp();  // moved on by every send: a sender still being ACK-clocked needs none
  if (!sent_any && ack_now_) {
    // In a receive batch an ACK for in-order data waits for the batch's end; one that reports a
    // gap, a duplicate or a state change (dupacks, SACK, D-SACK, FIN) goes at once.
    if (hold_ack_ && state_ == State::established && ooo_.empty() && !dsack_pending_) {
      ack_held_ = true;
      return;
    }
    send_ack();
  }
}

void Connection::retransmit_head() {
  const size_t len = std::min<size_t>(snd_ring_.size(), mss_now());
  const bool fin = fin_sent_ && len == snd_ring_.size();
  if (len == 0 && !fin) return;
  send_range(snd_una_, static_cast<uint32_t>(len), fin, false);
  high_rxt_ = seq_max(high_rxt_, snd_una_ + static_cast<uint32_t>(len) + (fin ? 1 : 0));
}

uint32_t Connection::take_sack_blocks(const wire::TcpOptions& o, uint32_t ack_seq) {
  if (!sack_on_ || o.sack_count == 0) return 0;
  const uint32_t before = sacked_.bytes();
  for (size_t i = 0; i < o.sack_count; ++i) {
    const wire::SackBlock& b = o.sack[i];
    // Blocks at or below the cumulative ACK (D-SACK, RFC 2883) or past what was sent are ignored.
    if (!seq_lt(b.left, b.right) || seq_le(b.right, ack_seq) || seq_gt(b.right, snd_max_)) continue;
    sacked_.add(seq_max(b.left, ack_seq), b.right);
  }
  const uint32_t after = sacked_.bytes();
  const uint32_t added = seq_gt(after, before) ? after - before : 0;
  stats_.sacked_bytes += added;
  return added;
}

// RFC 6675 IsLost(): a byte is lost when DupThresh (3) separate SACKed ranges or more than
// (DupThresh - 1) * SMSS SACKed bytes lie above it. That holds for every hole below some SACKed
// range's left edge: returns that edge (snd_una_ when no hole is lost).
uint32_t Connection::lost_below() const {
  const size_t n = sacked_.count();
  uint32_t above = 0;
  for (size_t k = n; k-- > 0;) {
    above += sacked_[k].right - sacked_[k].left;
    if (above > 2 * smss_ || n - k >= 3) return sacked_[k].left;
  }
  return snd_una_;
}

// RFC 6675 SetPipe(): un-SACKed bytes not deemed lost, plus those retransmitted (below HighRxt).
uint32_t Connection::pipe() const {
  if (rack_on()) {  // Linux's packets_in_flight in bytes: out - SACKed - lost + retransmitted
    // The records cover [SND.UNA, SND.MAX) without gaps: with no marks that is the sum.
    if (!rack_any_marked_) return snd_max_ - snd_una_;
    uint32_t p = 0;
    bool marked = false;
    for (size_t i = 0; i < sent_.size(); ++i) {
      const SentSeg& r = sent_[i];
      marked = marked || r.has(SentSeg::kSacked | SentSeg::kLost | SentSeg::kRetrans);
      if (r.has(SentSeg::kSacked)) continue;
      if (!r.has(SentSeg::kLost)) p += r.len();
      if (r.has(SentSeg::kRetrans)) p += r.len();
    }
    rack_any_marked_ = marked;
    return p;
  }
  const uint32_t lost = lost_below();
  uint32_t p = 0;
  uint32_t l = snd_una_;
  for (size_t k = 0; k <= sacked_.count(); ++k) {
    const uint32_t r = k < sacked_.count() ? sacked_[k].left : snd_max_;
    if (seq_lt(l, r)) {
      if (seq_lt(lost, r)) p += r - seq_max(l, lost);
      const uint32_t rx = seq_min(r, high_rxt_);
      if (in_recovery_ && seq_lt(l, rx)) p += rx - l;
    }
    if (k < sacked_.count()) l = sacked_[k].right;
  }
  return p;
}

// RFC 6675 5 step (C): while cwnd - pipe >= 1 SMSS, send NextSeg(): rule 1, the first lost
// un-SACKed byte past HighRxt; rule 2, new data the peer's window allows. Rules 3 and 4 (resending
// holes not yet deemed lost, the rescue retransmission) are left to the TLP and the RTO.
bool Connection::sack_recovery_send() {
  bool sent = false;
  // Bounded: each pass sends a segment that raises pipe by at least one byte, or stops.
  for (uint32_t guard = 0; guard < 4096; ++guard) {
    const uint32_t p = pipe();
    if (cwnd_ <= p || cwnd_ - p < smss_) break;
    const uint32_t mss = mss_now();
    const uint32_t lost = lost_below();
    const uint32_t from = seq_max(high_rxt_, snd_una_);
    bool resent = false;
    uint32_t l = snd_una_;
    for (size_t k = 0; k <= sacked_.count() && !resent; ++k) {
      const uint32_t r = k < sacked_.count() ? sacked_[k].left : snd_max_;
      const uint32_t start = seq_max(l, from);
      const uint32_t stop = seq_min(r, lost);
      if (seq_lt(start, stop)) {  // rule 1
        const uint32_t end = data_end();
        const uint32_t data_stop = seq_min(stop, end);
        const uint32_t len = seq_lt(start, data_stop) ? std::min(data_stop - start, mss) : 0;
        const bool fin = fin_sent_ && start + len == end && seq_gt(stop, end);
        if (len == 0 && !fin) break;
        send_range(start, len, fin, false);
        ++stats_.sack_retransmits;
        high_rxt_ = start + len + (fin ? 1 : 0);
        resent = true;
      }
      if (k < sacked_.count()) l = sacked_[k].right;
    }
    if (resent) {
      sent = true;
      continue;
    }
    // Rule 2: new data, as output() would send it (snd_nxt_ == snd_max_ in recovery).
    if (seq_lt(snd_nxt_, snd_max_) || (fin_sent_ && seq_gt(snd_nxt_, data_end()))) break;
    const size_t off = snd_nxt_ - snd_una_;
    const size_t avail = snd_ring_.size() - off;
    const uint32_t out = snd_nxt_ - snd_una_;
    const size_t room = snd_wnd_ > out ? snd_wnd_ - out : 0;
    const size_t len = std::min<size_t>({avail, mss, room});
    const bool fin = fin_queued_ && len == avail;
    if ((len == 0 && !fin) || (len < mss && len < avail)) break;
    send_at_nxt(static_cast<uint32_t>(len), fin, len > 0 && len == avail);
    sent = true;
  }
  return sent;
}

// Fast retransmit (RFC 5681 3.2, RFC 6582 3.2 step 2, RFC 6675 5 step 4). FlightSize leaves out
// what limited transmit sent (RFC 5681 3.2 step 2).
void Connection::enter_recovery() {
  const uint32_t flight = (dupacks_ > 0 && !rack_on() ? lt_base_ : snd_max_) - snd_una_;
  undo_start();
  ssthresh_ = cc_.on_congestion(flight, smss_);
  recover_ = snd_max_;
  in_recovery_ = true;
  tlp_deadline_ = kNever;
  ++stats_.fast_retransmits;
  high_rxt_ = snd_una_;
  if (rack_on()) {
    // RACK marked what is lost: the first goes now whatever pipe says (RFC 6675 step 4.3),
    // output() sends the rest as cwnd - pipe allows.
    cwnd_ = ssthresh_;
    rack_send_lost(true);
    return;
  }
  if (dupacks_ < 3) ++stats_.early_retransmits;
  retransmit_head();
  // NewReno inflates by the segments that left the network; with SACK, pipe counts them.
  cwnd_ = sack_on_ ? ssthresh_ : ssthresh_ + dupacks_ * smss_;
}

void Connection::input_syn_sent(const wire::TcpSegment& s) {
  const uint8_t f = s.h.flags;
  if (f & ack) {
    if (seq_le(s.h.ack, iss_) || seq_gt(s.h.ack, snd_max_)) {
      if (!(f & rst)) send_rst(s.h.ack);
      return;
    }
  }
  if (f & rst) {
    if (f & ack) terminate(CloseReason::refused);
    return;
  }
  if (!(f & syn)) return;
  irs_ = s.h.seq;
  rcv_nxt_ = irs_ + 1;
  apply_syn_options(s.h.options);
  snd_wnd_ = max_snd_wnd_ = s.h.window;
  snd_wl1_ = s.h.seq;
  if (f & ack) {
    snd_una_ = s.h.ack;
    snd_wl2_ = s.h.ack;
    if (rtt_active_) rto_.sample(clock_.now_ns() - rtt_start_ns_);
    rtt_active_ = false;
    rtx_deadline_ = kNever;
    cwnd_ = retries_ > 0 ? smss_  // RFC 5681 3.1: one segment if the SYN was retransmitted
                         : std::min(cfg_.initial_cwnd_segments * smss_, std::max(2 * smss_, 14600u));
    retries_ = 0;
    state_ = State::established;
    rcv_adv_ = rcv_nxt_;
    ack_now_ = true;
    if (cfg_.keepalive) keepalive_deadline_ = clock_.now_ns() + cfg_.keepalive_idle_ns;
    return;
  }
  // Simultaneous open (RFC 9293 figure 8): answer with SYN-ACK from the same ISS.
  state_ = State::syn_received;
  send_syn(true);
}

bool Connection::acceptable(const wire::TcpSegment& s) const {
  const uint32_t len = s.seg_len();
  const uint32_t wnd = seq_gt(rcv_adv_, rcv_nxt_) ? rcv_adv_ - rcv_nxt_ : 0;
  const uint32_t seq = s.h.seq;
  auto in_window = [&](uint32_t x) { return seq_le(rcv_nxt_, x) && seq_lt(x, rcv_nxt_ + wnd); };
  // A zero-length segment at the right edge is accepted (as Linux does): a peer whose window we
  // filled exactly sends its ACKs there.
  if (len == 0) return wnd == 0 ? seq == rcv_nxt_ : (in_window(seq) || seq == rcv_nxt_ + wnd);
  if (wnd == 0) return false;
  return in_window(seq) || in_window(seq + len - 1);
}

void Connection::input(const wire::TcpSegment& in) {
  const Clock::Hold hold(clock_);  // one reading per incoming segment (Linux: tcp_mstamp_refresh)
  Notify notify{*this};
  ++stats_.segments_in;
  const int64_t now = clock_.now_ns();
  last_input_ns_ = now;
  if (state_ == State::closed) return;
  if (state_ == State::syn_sent) {
    input_syn_sent(in);
    output();
    return;
  }
  wire::TcpSegment s = in;
  if (state_ == State::syn_received && (s.h.flags & syn) && s.h.seq == irs_ && !(s.h.flags & rst)) {
    // The peer's SYN again (our SYN-ACK was lost), or its SYN-ACK in a simultaneous open.
    if (!(s.h.flags & ack)) {
      send_syn(true);
      return;
    }
    s.h.flags &= static_cast<uint8_t>(~syn);
    s.h.seq = irs_ + 1;
  }
  const uint8_t f = s.h.flags;
  if (cfg_.keepalive && synchronized()) {
    keepalive_sent_ = 0;
    keepalive_deadline_ = now + cfg_.keepalive_idle_ns;
  }
  // PAWS (RFC 7323 5.3): an older timestamp than the last one is an old duplicate.
  if (ts_on_ && s.h.options.has_timestamps && !(f & rst) && seq_lt(s.h.options.ts_val, ts_recent_)) {
    ++stats_.paws_drops;
    send_ack();
    return;
  }
  if (!acceptable(s)) {
    if (!(f & rst)) {
      // In TIME-WAIT a retransmitted FIN (our last ACK was lost) restarts the 2 MSL wait.
      if (state_ == State::time_wait && (f & wire::tcpflag::fin)) time_wait_deadline_ = now + 2 * cfg_.msl_ns;
      // Data wholly below rcv_nxt arrived again: report it (RFC 2883 4.1).
      const auto plen = static_cast<uint32_t>(s.payload.size());
      if (plen > 0 && seq_le(s.h.seq + plen, rcv_nxt_)) note_duplicate(s.h.seq, s.h.seq + plen);
      ack_now_ = true;
      output();
    }
    return;
  }
  if (f & rst) {
    // RFC 5961 3.2: only an RST exactly at rcv_nxt resets; others in the window get a challenge.
    if (s.h.seq == rcv_nxt_) {
      terminate(state_ == State::syn_received ? CloseReason::refused : CloseReason::reset);
    } else {
      ++stats_.challenge_acks;
      send_ack();
    }
    return;
  }
  if (f & syn) {  // RFC 5961 4.2: a SYN in a synchronized connection gets a challenge ACK
    ++stats_.challenge_acks;
    send_ack();
    return;
  }
  if (!(f & ack)) return;
  if (state_ == State::syn_received) {
    if (!(seq_lt(snd_una_, s.h.ack) && seq_le(s.h.ack, snd_max_))) {
      send_rst(s.h.ack);
      return;
    }
    snd_una_ = iss_ + 1;
    snd_wnd_ = static_cast<uint32_t>(s.h.window) << snd_wscale_;
    max_snd_wnd_ = std::max(max_snd_wnd_, snd_wnd_);
    snd_wl1_ = s.h.seq;
    snd_wl2_ = s.h.ack;
    if (rtt_active_) rto_.sample(now - rtt_start_ns_);
    rtt_active_ = false;
    rtx_deadline_ = kNever;
    cwnd_ = retries_ > 0 ? smss_ : std::min(cfg_.initial_cwnd_segments * smss_, std::max(2 * smss_, 14600u));
    retries_ = 0;
    state_ = fin_queued_ ? State::fin_wait_1 : State::established;
    if (cfg_.keepalive) keepalive_deadline_ = now + cfg_.keepalive_idle_ns;
  }
  if (!process_ack(s)) return;
  if (state_ == State::closed) return;
  if (ts_on_ && s.h.options.has_timestamps && seq_le(s.h.seq, last_ack_sent_))
    ts_recent_ = s.h.options.ts_val;  // RFC 7323 4.3
  if (state_ == State::established || state_ == State::fin_wait_1 || state_ == State::fin_wait_2)
    note_urgent(s);
  if (state_ == State::time_wait) {
    if (f & wire::tcpflag::fin) {  // the peer's FIN again: our last ACK was lost
      ack_now_ = true;
      time_wait_deadline_ = now + 2 * cfg_.msl_ns;
    }
  } else if ((!s.payload.empty() || (f & wire::tcpflag::fin)) &&
             (state_ == State::established || state_ == State::fin_wait_1 || state_ == State::fin_wait_2)) {
    process_data(s);
  }
  output();
}

bool Connection::process_ack(const wire::TcpSegment& s) {
  const uint32_t a = s.h.ack;
  if (seq_gt(a, snd_max_)) {  // acknowledges something not yet sent (RFC 9293, RFC 5961 5.2)
    send_ack();
    return false;
  }
  if (seq_lt(a, snd_una_ - max_snd_wnd_)) {  // far too old (RFC 5961 5.2)
    send_ack();
    return false;
  }
  bool window_changed = false;
  if (seq_le(snd_una_, a) && (seq_lt(snd_wl1_, s.h.seq) || (snd_wl1_ == s.h.seq && seq_le(snd_wl2_, a)))) {
    const uint32_t wnd = static_cast<uint32_t>(s.h.window) << snd_wscale_;
    window_changed = wnd != snd_wnd_;
    snd_wnd_ = wnd;
    max_snd_wnd_ = std::max(max_snd_wnd_, wnd);
    snd_wl1_ = s.h.seq;
    snd_wl2_ = a;
  }
  const bool dsack = check_dsack(s.h.options, a);
  const uint32_t newly_sacked = take_sack_blocks(s.h.options, a);
  if (rack_on()) rack_on_ack(s.h.options, a);
  const bool recovering = in_recovery_ || retries_ > 0;
  if (seq_gt(a, snd_una_)) {
    on_new_ack(a, a - snd_una_);
  } else if (a == snd_una_ && snd_max_ != snd_una_ &&
             (sack_on_ ? newly_sacked > 0
                       : s.payload.empty() && !(s.h.flags & (syn | wire::tcpflag::fin)) && !window_changed)) {
    // RFC 5681 section 2's duplicate ACK; with SACK, RFC 6675's: one that SACKs new data,
    // whether or not it carries data (a peer sending too piggybacks its ACKs).
    on_dup_ack();
  }
  // RFC 6675 5 step (2): recovery also starts when IsLost(HighACK + 1).
  if (rack_on()) {
    rack_update_reo_wnd(dsack, recovering && !in_recovery_ && retries_ == 0);
    if (state_ != State::closed) rack_after_detect(rack_detect_loss());
  } else if (newly_sacked > 0 && !in_recovery_ && state_ != State::closed && snd_max_ != snd_una_ &&
             seq_ge(snd_una_, recover_) && seq_gt(lost_below(), snd_una_)) {
    enter_recovery();
  }
  if (snd_wnd_ > 0) {
    persist_deadline_ = kNever;
    persist_backoff_ = 0;
  } else if (persist_deadline_ != kNever) {
    retries_ = 0;  // the peer answers our probes: it is alive
  }
  try_undo();
  return true;
}

void Connection::on_new_ack(uint32_t a, uint32_t acked) {
  const bool fin_acked = fin_sent_ && a == data_end() + 1;
  const uint32_t data_acked = std::min<uint32_t>(acked, static_cast<uint32_t>(snd_ring_.size()));
  snd_ring_.consume(data_acked);
  snd_una_ = a;
  if (seq_lt(snd_nxt_, snd_una_)) snd_nxt_ = snd_una_;
  stats_.bytes_acked += data_acked;
  retries_ = 0;
  if (rtt_active_ && seq_gt(a, rtt_seq_)) {
    rto_.sample(clock_.now_ns() - rtt_start_ns_);
    rtt_active_ = false;
  }
  if (in_recovery_) {
    if (seq_ge(a, recover_)) {  // full ACK (RFC 6582 3.2 step 3)
      const uint32_t flight = snd_max_ - snd_una_;
      cwnd_ = std::min(ssthresh_, std::max(flight, smss_) + smss_);
      in_recovery_ = false;
      dupacks_ = 0;
    } else if (sack_on_) {
      // Partial ACK (RFC 6675): NextSeg picks what to send. The segment after the cumulative ACK
      // was sent before the retransmission that just arrived, so it is lost too unless already
      // resent (the RFC 6582 inference, which IsLost may not make yet with few SACKs above it).
      // With RACK the send times say it (the retransmission delivered was sent after it).
      if (!rack_on() && seq_le(high_rxt_, snd_una_)) retransmit_head();
    } else {  // partial ACK: the next hole is lost too; retransmit it and deflate
      retransmit_head();
      cwnd_ = cwnd_ > acked ? cwnd_ - acked : 0;
      if (acked >= smss_) cwnd_ += smss_;
      cwnd_ = std::max(cwnd_, smss_);
    }
  } else {
    dupacks_ = 0;
    if (cwnd_ < ssthresh_) {
      // Slow start (RFC 5681 eq. 2, at most one SMSS per ACK); with TSO every byte ACKed counts,
      // as in Linux, since the peer ACKs each super-segment once.
      cwnd_ += cfg_.tso_max > 0 ? acked : std::min(acked, smss_);
    } else {
      cwnd_ = cc_.on_ack(cwnd_, acked, smss_, clock_.now_ns(), rto_.srtt_ns());
    }
    cwnd_ = std::min(cwnd_, kMaxCwnd);
  }
  sacked_.trim_below(snd_una_);
  sent_.trim_below(snd_una_);
  tlp_out_ = false;
  if (snd_una_ == snd_max_)
    rtx_deadline_ = kNever;
  else
    arm_rtx();  // RFC 6298 5.3
  arm_tlp();
  if (fin_acked) {
    if (state_ == State::fin_wait_1)
      state_ = State::fin_wait_2;
    else if (state_ == State::closing)
      enter_time_wait();
    else if (state_ == State::last_ack)
      terminate(CloseReason::none);
  }
}

// Three dup ACKs, or fewer when less than four segments are out and nothing new can be sent to
// make more (RFC 5827 early retransmit, byte-based, section 3.2): otherwise a loss in a small
// window or at the end of a transfer always waits for the RTO.
uint32_t Connection::dupack_threshold() const {
  const uint32_t flight = snd_max_ - snd_una_;
  if (flight >= 4 * smss_) return 3;
  const size_t unsent = snd_ring_.size() > flight ? snd_ring_.size() - flight : 0;
  if (unsent > 0 && snd_wnd_ > flight) return 3;  // new data can go out (limited transmit)
  const uint32_t oseg = (flight + smss_ - 1) / smss_;
  return oseg >= 2 ? std::min<uint32_t>(oseg - 1, 3) : 3;
}

void Connection::on_dup_ack() {
  ++stats_.dup_acks;
  if (in_recovery_) {
    // NewReno: each dup ACK is a segment that left the network. With SACK pipe counts them.
    if (!sack_on_) cwnd_ = std::min(cwnd_ + smss_, kMaxCwnd);
    return;
  }
  if (++dupacks_ == 1) lt_base_ = snd_max_;
  if (rack_on()) return;  // RACK, not DupThresh, decides (RFC 8985 3.4; as Linux with RACK)
  if (dupacks_ < dupack_threshold() || !seq_ge(snd_una_, recover_)) return;
  enter_recovery();
}

wire::MutBytes Connection::rx_place(uint32_t seq, size_t len) {
  if (len == 0 || seq != rcv_nxt_ || !ooo_.empty() || fin_received_ || urg_pending_) return {};
  if (state_ != State::established && state_ != State::fin_wait_1 && state_ != State::fin_wait_2) return {};
  if (len > rcv_ring_.free()) return {};
  const wire::MutBytes tail = rcv_ring_.reserve(0).first;
  return tail.size() >= len ? tail.first(len) : wire::MutBytes{};
}

void Connection::process_data(const wire::TcpSegment& s) {
  uint32_t seq = s.h.seq;
  wire::Bytes data = s.payload;
  bool fin = (s.h.flags & wire::tcpflag::fin) != 0;
  if (seq_lt(seq, rcv_nxt_)) {  // starts with bytes we already have
    const uint32_t dup = rcv_nxt_ - seq;
    note_duplicate(seq, seq + std::min<uint32_t>(dup, static_cast<uint32_t>(data.size())));
    if (dup > data.size() || (dup == data.size() && !fin)) {  // nothing new: a duplicate
      ack_now_ = true;
      return;
    }
    data = data.subspan(dup);
    seq = rcv_nxt_;
  }
  const size_t off = seq - rcv_nxt_;
  const size_t room = rcv_ring_.free();
  if (off > room || (off == room && !data.empty())) {
    ack_now_ = true;
    return;
  }
  if (data.size() > room - off) {
    data = data.first(room - off);
    fin = false;  // the FIN lies past what we keep
  }
  if (off == 0) {
    const bool filled_hole = !ooo_.empty();
    const uint32_t from = rcv_nxt_;
    store(rcv_nxt_, data);
    rcv_ring_.commit(data.size());
    rcv_nxt_ += static_cast<uint32_t>(data.size());
    stats_.bytes_received += data.size();
    while (!ooo_.empty() && seq_le(ooo_[0].left, rcv_nxt_)) {
      const uint32_t right = ooo_.take_contiguous(rcv_nxt_);
      if (seq_gt(right, rcv_nxt_)) {
        rcv_ring_.commit(right - rcv_nxt_);
        stats_.bytes_received += right - rcv_nxt_;
        rcv_nxt_ = right;
      }
    }
    take_urgent_byte(from);
    if (fin && seq + data.size() == rcv_nxt_) {
      // in order
    } else if (ooo_fin_ && ooo_fin_seq_ == rcv_nxt_) {
      fin = true;
    } else {
      fin = false;
    }
    segs_unacked_ += static_cast<uint32_t>(data.size());
    // RFC 1122 4.2.3.2 / RFC 5681 4.2: an ACK for at least every second full-sized segment; with
    // timestamps a full segment carries 12 bytes less data than the MSS we announced.
    const uint32_t full_segment = cfg_.mss - (ts_on_ ? 12u : 0u);
    if (filled_hole || !cfg_.delayed_ack || segs_unacked_ >= 2u * full_segment) {
      ack_now_ = true;
    } else if (!data.empty() && delack_deadline_ == kNever) {
      delack_deadline_ = clock_.now_ns() + cfg_.delayed_ack_ns;
    }
  } else {
    // Held already past a gap: a duplicate (RFC 2883 4.1, reported with the block that holds it).
    if (!data.empty() && ooo_.covering(seq, seq + static_cast<uint32_t>(data.size())) < ooo_.count())
      note_duplicate(seq, seq + static_cast<uint32_t>(data.size()));
    const size_t n = store(seq, data);
    ++stats_.out_of_order;
    if (ooo_.add(seq, seq + static_cast<uint32_t>(n)) && fin && n == data.size()) {
      ooo_fin_ = true;
      ooo_fin_seq_ = seq + static_cast<uint32_t>(n);
    }
    fin = false;
    ack_now_ = true;  // RFC 5681 4.2: an out-of-order segment is acknowledged at once
  }
  if (!fin) return;
  rcv_nxt_ += 1;
  fin_received_ = true;
  ooo_fin_ = false;
  ack_now_ = true;
  if (state_ == State::established)
    state_ = State::close_wait;
  else if (state_ == State::fin_wait_1)
    state_ = State::closing;
  else if (state_ == State::fin_wait_2)
    enter_time_wait();
}

// Writes `data`, which starts at `seq` (at or past rcv_nxt_), past the ring's tail, but not over
// bytes already held out of order: a byte's first arrival is kept. Linux keeps, per byte, that of
// the segment starting lowest (a later one starting lower replaces it); the RFCs leave it open,
// and first-arrival is the rule IPv4 reassembly follows here too (ipv4_reassembly.hpp): a
// segment sent later with other bytes cannot rewrite what was acknowledged by SACK. Returns how
// many bytes fit in the ring.
size_t Connection::store(uint32_t seq, wire::Bytes data) {
  const size_t off = seq - rcv_nxt_;
  const size_t room = rcv_ring_.free();
  if (off >= room) return 0;
  data = data.first(std::min(data.size(), room - off));
  const uint32_t end = seq + static_cast<uint32_t>(data.size());
  uint32_t at = seq;
  for (size_t k = 0; k < ooo_.count() && seq_lt(at, end); ++k) {
    const SeqRange& r = ooo_[k];
    if (seq_le(r.right, at)) continue;
    if (seq_ge(r.left, end)) break;
    if (seq_lt(at, r.left)) rcv_ring_.write_past_tail(at - rcv_nxt_, data.subspan(at - seq, r.left - at));
    at = r.right;
  }
  if (seq_lt(at, end)) rcv_ring_.write_past_tail(at - rcv_nxt_, data.subspan(at - seq));
  return data.size();
}

// RFC 9293 3.9 / RFC 6093: the urgent pointer names the byte before it (the BSD reading, which
// Linux keeps by default: tcp_stdurg 0). Linux records it and, unless the socket set
// SO_OOBINLINE, leaves it out of the stream (readable only by recv(MSG_OOB)); so does this
// stack unless Config::oob_inline (the byte is kept for oob_byte(): the socket API has no
// MSG_OOB). A newer pointer replaces one whose byte has not arrived.
void Connection::note_urgent(const wire::TcpSegment& s) {
  if (!(s.h.flags & urg) || s.h.urgent == 0 || fin_received_) return;
  const uint32_t ptr = s.h.seq + s.h.urgent - 1;
  if (seq_lt(ptr, rcv_nxt_) || (urg_pending_ && seq_le(ptr, urg_seq_))) return;
  urg_pending_ = true;
  urg_seq_ = ptr;
}

// In-order bytes from `from` to rcv_nxt_ just became readable: take the urgent byte out if it is
// among them.
void Connection::take_urgent_byte(uint32_t from) {
  if (!urg_pending_ || !seq_ge(urg_seq_, from) || !seq_lt(urg_seq_, rcv_nxt_)) return;
  urg_pending_ = false;
  const size_t at = rcv_ring_.size() - (rcv_nxt_ - urg_seq_);
  const auto [p1, p2] = rcv_ring_.peek(at, 1);
  oob_byte_ = p1.empty() ? p2[0] : p1[0];
  has_oob_ = true;
  if (cfg_.oob_inline) return;
  const size_t past = ooo_.empty() ? 0 : ooo_[ooo_.count() - 1].right - rcv_nxt_;
  rcv_ring_.erase(at, past);
}

void Connection::on_rtx_timeout() {
  ++stats_.timeouts;
  tlp_deadline_ = kNever;
  rtt_active_ = false;
  if (state_ == State::syn_sent || state_ == State::syn_received) {
    // A half-open passive connection gives up sooner (Linux: tcp_synack_retries 5, then 63 s).
    const int limit = state_ == State::syn_received ? cfg_.synack_retries : cfg_.syn_retries;
    if (++retries_ > limit) return terminate(CloseReason::timeout);
    rto_.back_off();
    ++stats_.retransmits;
    send_syn(state_ == State::syn_received);
    arm_rtx();
    return;
  }
  if (snd_una_ == snd_max_) return;
  if (++retries_ > cfg_.max_retransmits) return terminate(CloseReason::timeout);
  if (retries_ == 1) {
    undo_start();
    ssthresh_ = cc_.on_congestion(snd_max_ - snd_una_, smss_);  // RFC 5681 eq. 4
  }
  if (retries_ >= 2) sacked_.clear();  // RFC 2018 8: the receiver may have reneged on its SACKs
  high_rxt_ = snd_una_;
  cwnd_ = smss_;  // loss window
  in_recovery_ = false;
  dupacks_ = 0;
  recover_ = snd_max_;  // RFC 6582 4.1: no fast retransmit on dup ACKs from before the timeout
  rto_.back_off();
  rack_deadline_ = kNever;
  if (rack_on()) {
    // Everything not SACKed is deemed lost and resent in order as cwnd grows from one segment
    // (rack_send_lost; RFC 8985 6.3 would spare recent sends, Linux's go-back-N does not).
    for (size_t i = 0; i < sent_.size(); ++i) {
      SentSeg& r = sent_[i];
      if (retries_ >= 2) r.flags &= static_cast<uint8_t>(~SentSeg::kSacked);
      if (!r.has(SentSeg::kSacked)) {
        r.flags = static_cast<uint8_t>((r.flags | SentSeg::kLost) & ~SentSeg::kRetrans);
        rack_maybe_lost_ = rack_any_lost_ = rack_any_marked_ = true;
      }
    }
  } else {
    snd_nxt_ = snd_una_;  // go back: resend from the first unacknowledged byte
  }
  arm_rtx();
  output();
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
    if (keepalive_sent_ >= cfg_.keepalive_probes) return terminate(CloseReason::timeout);
    ++keepalive_sent_;
    send_probe();
    keepalive_deadline_ = now + cfg_.keepalive_interval_ns;
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
