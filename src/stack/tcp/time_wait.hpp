#pragma once
// TIME-WAIT for the connections the application let go, as Linux's timewait sockets: a few dozen
// bytes per 4-tuple instead of a whole Connection, for the 2 MSL after the close. A server that
// closes first (nginx with `Connection: close`) holds one per connection it served in the last
// minute: at 10,000 connections a second that would be 600,000 of them, 1.1 GB as Connections
// (Connection::memory() in TIME-WAIT). Here a wait costs under kBytesPerWait, and the table is
// capped like Linux's tcp_max_tw_buckets (Config::max_time_wait: 131,072, about 11 MiB), past
// which a connection closes without the wait (Linux does the same).
//
// What a segment for a waiting 4-tuple gets (RFC 9293 3.10.7.4 in TIME-WAIT, and Linux's
// tcp_timewait_state_process):
//   - a SYN that may start a new incarnation (a newer timestamp, RFC 6191; without timestamps a
//     sequence number past everything received, RFC 1122 4.2.2.13) ends the wait when a listener
//     would take it: the new connection's ISS lies past everything the old one sent;
//   - an RST at the next expected sequence number ends the wait; other RSTs are dropped;
//   - a bare ACK at the next expected sequence number is dropped;
//   - anything else (the peer's FIN again, an old or PAWS-failing segment) is answered with an
//     ACK of everything, and a FIN restarts the wait (our last ACK was lost).
#include <cstdint>
#include <deque>
#include <unordered_map>

#include "stack/tcp/connection.hpp"

namespace weft::stack::tcp {

// Whether a SYN for a 4-tuple in TIME-WAIT may start a new incarnation of it (Linux's
// tcp_timewait_state_process): a bare SYN that PAWS does not reject and whose timestamp is newer
// than the last one received (RFC 6191; only when the old connection used timestamps), or whose
// sequence number lies past everything received (RFC 1122 4.2.2.13). The one rule for both
// representations of a wait: an entry of TimeWaitTable and a Connection in State::time_wait
// that the application has not let go yet (TcpLayer::input).
bool time_wait_takes_syn(const wire::TcpSegment& s, uint32_t rcv_nxt, bool ts_on, uint32_t ts_recent);
// The new incarnation's ISS: past everything the old one sent, so no old segment of ours falls
// into the new window (Linux: SND.NXT + 65537).
constexpr uint32_t time_wait_next_iss(uint32_t snd_nxt) { return snd_nxt + 65537; }

struct TimeWaitEntry {
  uint32_t snd_nxt = 0;    // the SEQ of our ACKs: past everything we sent, the FIN included
  uint32_t rcv_nxt = 0;    // past the peer's FIN
  uint32_t ts_recent = 0;  // the peer's last TSval (PAWS, and our ACKs' TSecr)
  uint32_t ts_offset = 0;  // our TSval is the time in ms plus this
  int64_t until = 0;       // the end of the wait
  uint16_t window = 0;     // the window field of our ACKs
  bool ts_on = false;
};

class TimeWaitTable {
 public:
  enum class Verdict : uint8_t {
    absent,   // no wait for this 4-tuple: the segment goes on to the listeners
    dropped,  // taken, nothing to send (or the wait ended)
    ack,      // answer with the ACK written to `ack_out`
    reopen,   // a new incarnation: the wait ended, the SYN goes to the listener with `iss`
  };
  TimeWaitTable(size_t cap, int64_t wait_ns) : cap_(cap), wait_ns_(wait_ns) {}

  // Starts the wait for `t`. False when the table is full (the connection closes without it).
  bool add(const FourTuple& t, const TimeWaitEntry& e, int64_t now);
  // A segment for `t`. `may_reopen`: a listener would take a SYN for `t`.
  Verdict input(const FourTuple& t, const wire::TcpSegment& s, int64_t now, bool may_reopen,
                wire::TcpHeader& ack_out, uint32_t& iss);
  // Ends the waits that are over (cheap when none is: a look at the oldest).
  void expire(int64_t now);
  bool contains(const FourTuple& t, int64_t now) const;
  // Ends the wait of `t`, if any (its Connection took a SYN first: TcpLayer::input).
  void erase(const FourTuple& t) { waits_.erase(t); }
  size_t size() const { return waits_.size(); }
  bool empty() const { return waits_.empty(); }
  // The most memory one wait holds here (its map node and bucket, its place in the order).
  static constexpr size_t kBytesPerWait = 96;

 private:
  struct Due {
    int64_t until;
    FourTuple t;
  };
  size_t cap_;
  int64_t wait_ns_;
  std::unordered_map<FourTuple, TimeWaitEntry, TupleHash> waits_;
  // The waits in the order they began. A wait restarted by a FIN, or begun with less than 2 MSL
  // left, is found by its entry's `until` when its turn comes and queued again.
  std::deque<Due> order_;
};

}  // namespace weft::stack::tcp
