// D-SACK (RFC 2883): the receiver reports a duplicate segment in the first SACK block; the sender
// learns from it that a retransmission was not needed. Undo follows Linux (tcp_try_undo_dsack,
// tcp_undo_cwnd_reduction) and RFC 3708's detection: when every retransmission of a loss-recovery
// episode was reported as a duplicate, the episode was spurious (reordering or delay, not loss), and
// cwnd and ssthresh go back to what they were before it.
#include <algorithm>

#include "stack/tcp/connection.hpp"

namespace weft::stack::tcp {

// Receiver (RFC 2883 4): [left, right) arrived again; the next segment reports it first.
void Connection::note_duplicate(uint32_t left, uint32_t right) {
  if (!sack_on_ || !seq_lt(left, right)) return;
  dsack_ = {left, right};
  dsack_pending_ = true;
  ack_now_ = true;
}

// Sender (RFC 2883 4.1): the first block is a D-SACK when it lies below the cumulative ACK, or
// within the second block. Only what this episode retransmitted counts toward undo (Linux checks the
// segment's retransmitted mark), so a duplicate the network made of an original proves nothing.
bool Connection::check_dsack(const wire::TcpOptions& o, uint32_t ack) {
  if (!sack_on_ || o.sack_count == 0) return false;
  const wire::SackBlock& b = o.sack[0];
  if (!seq_lt(b.left, b.right)) return false;
  const bool below = seq_le(b.right, ack);
  const bool within = o.sack_count >= 2 && seq_le(o.sack[1].left, b.left) && seq_le(b.right, o.sack[1].right);
  if (!below && !within) return false;
  ++stats_.dsacks_received;
  if (!undo_open_) return true;
  for (size_t i = 0; i < undo_rtx_.count(); ++i) {
    const uint32_t l = seq_max(b.left, undo_rtx_[i].left);
    const uint32_t r = seq_min(b.right, undo_rtx_[i].right);
    if (seq_lt(l, r)) undo_dsacked_.add(l, r);  // a subset of undo_rtx_, so never more ranges
  }
  return true;
}

// A fast retransmit or the first timeout: a new episode, with the window it is about to reduce
// (Linux's prior_ssthresh, tcp_current_ssthresh: at least 3/4 of cwnd).
void Connection::undo_start() {
  undo_open_ = true;
  prior_cwnd_ = cwnd_;
  prior_ssthresh_ = std::max(ssthresh_, cwnd_ / 2 + cwnd_ / 4);
  undo_rtx_.clear();
  undo_dsacked_.clear();
}

void Connection::undo_note_retransmit(uint32_t seq, uint32_t end) {
  if (!undo_open_ || !seq_lt(seq, end)) return;
  // Resent twice: one copy may have been needed even if the other is reported as a duplicate.
  if (undo_rtx_.overlaps(seq, end) || !undo_rtx_.add(seq, end)) undo_open_ = false;
}

// Once the recovery is over (as Linux, in the open state), an episode whose retransmitted bytes
// were all D-SACKed is undone: cwnd and ssthresh back to at least what they were before it.
void Connection::try_undo() {
  if (!undo_open_ || in_recovery_ || retries_ > 0 || undo_rtx_.empty()) return;
  if (undo_dsacked_.bytes() != undo_rtx_.bytes()) return;
  cwnd_ = std::max(cwnd_, prior_cwnd_);
  ssthresh_ = std::max(ssthresh_, prior_ssthresh_);
  undo_open_ = false;
  ++stats_.spurious_undone;
}

}  // namespace weft::stack::tcp
