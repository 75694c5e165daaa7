// A connection's input (RFC 9293 3.10.7): the SYN-SENT step, the acceptability test, the ACK
// (new data acknowledged, duplicates, window updates) and the data (in order, out of order, FIN,
// the urgent pointer). The rest of Connection is in connection.cpp; output.cpp sends,
// recovery.cpp repairs losses.
#include <algorithm>

#include "stack/tcp/connection.hpp"

namespace weft::stack::tcp {

namespace {
using namespace wire::tcpflag;
}  // namespace

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
    if (cfg_.keepalive) keepalive_deadline_ = last_heard_ns_ + cfg_.keepalive_idle_ns;
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
  last_heard_ns_ = now;
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
  // Heard from the peer (last_heard_ns_, above): the keepalive timer is not moved here (a heap
  // update per segment); it re-arms itself from that time when it fires (as Linux's
  // tcp_keepalive_timer).
  if (cfg_.keepalive && synchronized()) keepalive_sent_ = 0;
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
    // RFC 5961 3.2: only an RST exactly at rcv_nxt resets; others in the window get a challenge
    // (in TIME-WAIT none: Linux's TIME-WAIT drops them unanswered, as the compact table does).
    if (s.h.seq == rcv_nxt_) {
      terminate(state_ == State::syn_received ? CloseReason::refused : CloseReason::reset);
    } else if (state_ != State::time_wait) {
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
    if (cfg_.keepalive) keepalive_deadline_ = last_heard_ns_ + cfg_.keepalive_idle_ns;
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

}  // namespace weft::stack::tcp
