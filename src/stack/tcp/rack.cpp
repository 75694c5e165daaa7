// RACK (RFC 8985, "RACK-TLP"): a segment is deemed lost when a segment sent after it was
// delivered (ACKed or SACKed) and more than an RTT plus a reordering window has passed since it
// was sent. Unlike RFC 6675's DupThresh this also finds lost retransmissions (a retransmission
// is a new send with a new time), tolerates reordering once seen, and a timer finishes the job
// when the ACKs stop. The tail loss probe (output.cpp, on_tlp) draws the ACK it needs at the
// end of a flight. Loss marks feed pipe() and rack_send_lost(); congestion control is unchanged.
#include <algorithm>

#include "stack/tcp/connection.hpp"

namespace weft::stack::tcp {

namespace {
// RFC 8985 6.2 RACK_sent_after: sent later, or at the same time with a higher end.
bool sent_after(int64_t t1, uint32_t end1, int64_t t2, uint32_t end2) {
  return t1 > t2 || (t1 == t2 && seq_gt(end1, end2));
}
}  // namespace

// Every (re)transmission of [seq, end): new sequence space gets a record, a resend updates the
// records it covers (split to its edges) with the new time.
void Connection::rack_log_send(uint32_t seq, uint32_t end) {
  const int64_t now = clock_.now_ns();
  if (seq_lt(seq, snd_max_)) {
    const uint32_t rend = seq_min(end, snd_max_);
    sent_.split_at(seq);
    sent_.split_at(rend);
    for (size_t i = sent_.find(seq); i < sent_.size() && seq_lt(sent_[i].start, rend); ++i) {
      SentSeg& r = sent_[i];
      r.xmit_ns = now;
      r.flags |= SentSeg::kRetrans | SentSeg::kEverRetrans;
      rack_any_marked_ = true;
    }
  }
  if (seq_gt(end, snd_max_)) sent_.append(seq_max(seq, snd_max_), end, now);
}

// RFC 8985 6.2 steps 1-2 (RACK_update, RACK_detect_reordering) for the sends this ACK delivers:
// those below the cumulative ACK not SACKed before, and those its SACK blocks cover.
void Connection::rack_on_ack(const wire::TcpOptions& o, uint32_t ack) {
  const int64_t now = clock_.now_ns();
  bool found = false;
  int64_t best_ns = 0;
  uint32_t best_end = 0;
  auto deliver = [&](const SentSeg& r) {
    const int64_t rtt = now - r.xmit_ns;
    if (r.has(SentSeg::kEverRetrans)) {
      // Which transmission arrived is ambiguous: skip when the echoed timestamp predates this
      // send, or the RTT is shorter than any seen (the ACK answers an earlier one).
      if (ts_on_ && o.has_timestamps && seq_lt(o.ts_ecr, static_cast<uint32_t>(r.xmit_ns / kMs) + ts_offset_))
        return;
      if (rtt < rack_min_rtt_ns_) return;
    } else {
      rack_min_rtt_ns_ = std::min(rack_min_rtt_ns_, rtt);
      if (seq_lt(r.end, rack_fack_))
        rack_reordering_seen_ = true;  // delivered below one delivered earlier, never resent
      else
        rack_fack_ = r.end;
    }
    if (!found || sent_after(r.xmit_ns, r.end, best_ns, best_end)) {
      found = true;
      best_ns = r.xmit_ns;
      best_end = r.end;
    }
  };
  for (size_t i = 0; i < sent_.size() && seq_le(sent_[i].end, ack); ++i)
    if (!sent_[i].has(SentSeg::kSacked)) deliver(sent_[i]);
  const uint32_t low = seq_max(ack, snd_una_);
  // Blocks in sequence order (the receiver sends the most recent first): two ranges newly SACKed
  // by one ACK are not reordering.
  size_t order[wire::kMaxSackBlocks];
  const size_t nb = std::min<size_t>(o.sack_count, wire::kMaxSackBlocks);
  for (size_t b = 0; b < nb; ++b) {
    size_t k = b;
    for (; k > 0 && seq_gt(o.sack[order[k - 1]].left, o.sack[b].left); --k) order[k] = order[k - 1];
    order[k] = b;
  }
  for (size_t ob = 0; ob < nb; ++ob) {
    const size_t b = order[ob];
    // The blocks take_sack_blocks() takes: above the cumulative ACK and within what was sent.
    if (!seq_lt(o.sack[b].left, o.sack[b].right) || seq_le(o.sack[b].right, low) ||
        seq_gt(o.sack[b].right, snd_max_))
      continue;
    const uint32_t left = seq_max(o.sack[b].left, low);
    const uint32_t right = o.sack[b].right;
    sent_.split_at(left);
    sent_.split_at(right);
    for (size_t i = sent_.find(left); i < sent_.size() && seq_le(sent_[i].end, right); ++i) {
      SentSeg& r = sent_[i];
      if (r.has(SentSeg::kSacked) || seq_lt(r.start, left)) continue;
      r.flags |= SentSeg::kSacked;
      rack_any_marked_ = true;
      deliver(r);
    }
  }
  if (!found) return;
  rack_rtt_ns_ = now - best_ns;
  if (rack_xmit_ns_ < 0 || sent_after(best_ns, best_end, rack_xmit_ns_, rack_end_)) {
    rack_xmit_ns_ = best_ns;
    rack_end_ = best_end;
  }
}

// RFC 8985 6.2 step 4 (RACK_update_reo_wnd): a D-SACK says a segment was resent that only came
// late, so the window grows by min_RTT / 4 for each round trip with one (RACK.reo_wnd_mult, up to
// SRTT below), and back to one after 16 recoveries without any. As Linux (tcp_dsack_seen), only
// once reordering was seen: without it a D-SACK comes from a timeout's go-back resend or a lost
// ACK, and widening the window would only delay finding real losses (in the netsim, 10 % loss
// without reordering: 7 -> 13 RTOs over two seeds when every D-SACK counted).
void Connection::rack_update_reo_wnd(bool dsack, bool left_recovery) {
  if (rack_dsack_round_on_ && seq_ge(snd_una_, rack_dsack_round_)) rack_dsack_round_on_ = false;
  if (!rack_dsack_round_on_ && dsack && rack_reordering_seen_) {
    rack_dsack_round_on_ = true;
    rack_dsack_round_ = snd_max_;
    rack_reo_wnd_mult_ = std::min<uint32_t>(rack_reo_wnd_mult_ + 1, 64);
    rack_reo_wnd_persist_ = 16;
  } else if (left_recovery && --rack_reo_wnd_persist_ <= 0) {
    rack_reo_wnd_mult_ = 1;
  }
}

// RFC 8985 6.2 step 4 (RACK_reo_wnd): none without reordering seen while recovering or once
// DupThresh segments are SACKed (RACK then acts as fast retransmit would); else min_RTT / 4 times
// the D-SACK multiplier, at most SRTT.
int64_t Connection::rack_reo_wnd() const {
  if (!rack_reordering_seen_) {
    if (in_recovery_ || retries_ > 0) return 0;
    size_t sacked = 0;
    for (size_t i = 0; i < sent_.size() && sacked < 3; ++i) sacked += sent_[i].has(SentSeg::kSacked) ? 1 : 0;
    if (sacked >= 3) return 0;
  }
  const int64_t min_rtt = rack_min_rtt_ns_ == kNever ? rto_.srtt_ns() : rack_min_rtt_ns_;
  return std::min(min_rtt / 4 * rack_reo_wnd_mult_, rto_.srtt_ns());
}

// RFC 8985 6.2 step 5 (RACK_detect_loss): each segment sent before the most recently sent one
// delivered is lost once RACK.rtt + reo_wnd have passed since it was sent; the reordering timer
// is armed for the latest of those still waiting. Segments deemed lost and not yet resent are
// left alone (the RFC's INFINITE_TS).
uint32_t Connection::rack_detect_loss() {
  rack_deadline_ = kNever;
  if (rack_xmit_ns_ < 0 || sent_.empty()) return 0;
  const int64_t now = clock_.now_ns();
  int64_t reo = -1;  // rack_reo_wnd() walks the log too: only when a candidate is found
  int64_t wait = 0;
  uint32_t newly = 0;
  for (size_t i = 0; i < sent_.size(); ++i) {
    SentSeg& r = sent_[i];
    // Records are in sequence order and first sent in that order, and a resend only makes a
    // record later: past a never-resent record sent after RACK.xmit_ts none was sent before it.
    if (!r.has(SentSeg::kEverRetrans) && !sent_after(rack_xmit_ns_, rack_end_, r.xmit_ns, r.end)) break;
    if (r.has(SentSeg::kSacked) || (r.has(SentSeg::kLost) && !r.has(SentSeg::kRetrans))) continue;
    if (!sent_after(rack_xmit_ns_, rack_end_, r.xmit_ns, r.end)) continue;
    if (reo < 0) reo = rack_reo_wnd();
    const int64_t remaining = r.xmit_ns + rack_rtt_ns_ + reo - now;
    if (remaining > 0) {
      wait = std::max(wait, remaining);
      continue;
    }
    ++stats_.rack_lost;
    if (r.has(SentSeg::kRetrans)) ++stats_.lost_retransmits;
    r.flags = static_cast<uint8_t>((r.flags | SentSeg::kLost) & ~SentSeg::kRetrans);
    rack_maybe_lost_ = rack_any_lost_ = rack_any_marked_ = true;
    newly += r.len();
  }
  if (wait > 0) rack_deadline_ = now + wait;
  return newly;
}

// A loss starts fast recovery (RFC 8985 3.4 with RFC 6675's window), unless one is under way
// or the loss is of data sent before the last recovery point (RFC 6582 4.1). Losses found
// during a recovery in data sent after it began are a new congestion event once it ends.
void Connection::rack_after_detect(uint32_t newly_lost) {
  if (in_recovery_ || snd_max_ == snd_una_ || !seq_ge(snd_una_, recover_)) return;
  bool lost = newly_lost > 0;
  if (!lost && !rack_any_lost_) return;
  bool any_lost = false;
  for (size_t i = 0; i < sent_.size() && !lost; ++i) {
    any_lost = any_lost || sent_[i].has(SentSeg::kLost);
    lost = sent_[i].has(SentSeg::kLost) && !sent_[i].has(SentSeg::kSacked);
  }
  if (!lost && !any_lost) rack_any_lost_ = false;
  if (lost) enter_recovery();
}

// RFC 6675 NextSeg rule 1 with RACK's marks: the lowest segment deemed lost and not resent since,
// while cwnd - pipe >= 1 SMSS (or regardless: `force`, the fast retransmit); at most one MSS (the record is
// split when it is larger).
bool Connection::rack_send_lost(bool force) {
  if (!rack_maybe_lost_) return false;
  const uint32_t p = force ? 0 : pipe();
  if (cwnd_ <= p || cwnd_ - p < smss_) return false;
  const uint32_t end = data_end();
  for (size_t i = 0; i < sent_.size(); ++i) {
    const SentSeg r = sent_[i];
    if (r.has(SentSeg::kSacked) || !r.has(SentSeg::kLost) || r.has(SentSeg::kRetrans)) continue;
    // Nothing past the peer's window but its first byte (Linux's tcp_retransmit_skb): a peer that
    // shrank its window would drop it, and the head alone probes a closed one.
    if (r.start != snd_una_ && !seq_lt(r.start, snd_una_ + snd_wnd_)) break;
    const uint32_t stop = seq_min(r.end, end);
    uint32_t len = seq_lt(r.start, stop) ? stop - r.start : 0;
    const uint32_t mss = mss_now();
    if (len > mss) {
      sent_.split_at(r.start + mss);
      len = mss;
    }
    const bool fin = fin_sent_ && r.start + len == end && seq_gt(r.end, end);
    if (len == 0 && !fin) continue;
    send_range(r.start, len, fin, false);
    ++stats_.sack_retransmits;
    // A resent head gets a whole RTO (as Linux does): RACK finds its loss again sooner if it is.
    if (r.start == snd_una_) arm_rtx();
    return true;
  }
  rack_maybe_lost_ = false;
  return false;
}

}  // namespace weft::stack::tcp
