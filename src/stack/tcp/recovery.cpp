// Loss recovery: duplicate ACKs and fast retransmit (RFC 5681 3.2, RFC 5827 early retransmit,
// RFC 6582 NewReno), the SACK scoreboard and RFC 6675's IsLost, pipe and NextSeg. RACK, which
// decides instead of DupThresh when on, is rack.cpp; D-SACK and undo dsack.cpp.
#include <algorithm>

#include "stack/tcp/connection.hpp"

namespace weft::stack::tcp {

namespace {
using namespace wire::tcpflag;
}  // namespace

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

}  // namespace weft::stack::tcp
