// A connection's output (RFC 9293 3.10.7 and 3.8; RFC 5681, RFC 6298, RFC 8985 7): what goes out
// when, segment building and TSO super-segments, the segments without data (ACK, RST, probes),
// and the timers that resend: the retransmission timeout and the tail loss probe.
// The rest of Connection is in connection.cpp; input.cpp receives, recovery.cpp repairs losses.
#include <algorithm>

#include "stack/tcp/connection.hpp"

namespace weft::stack::tcp {

namespace {
using namespace wire::tcpflag;
}  // namespace

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

}  // namespace weft::stack::tcp
