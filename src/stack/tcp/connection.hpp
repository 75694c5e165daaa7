#pragma once
// One TCP connection: the RFC 9293 state machine with its send and receive buffers and timers.
//
// It knows nothing of IP or devices: segments come in through input() (already parsed and
// checksummed, addressed to this connection) and go out through a SegmentSink as a header plus
// up to two payload pieces pointing into the send ring (zero copy up to the sink). Time comes
// from the stack's Clock; poll() runs whichever timers are due and next_deadline() says when to
// call it again.
//
// What it implements: active and passive open, simultaneous open and close, TIME-WAIT (2 MSL),
// RST acceptance and challenge ACKs (RFC 5961), out-of-window handling, RFC 6298 RTO with Karn's
// rule and exponential backoff, slow start / congestion avoidance and NewReno fast retransmit
// and recovery (RFC 5681, 6582), window scaling, timestamps and PAWS (RFC 7323), delayed ACKs,
// Nagle (switchable), sender and receiver silly-window avoidance, zero-window probes (Linux
// style: a zero-length segment below snd_una that the peer must ACK), keepalive, SACK (RFC 2018:
// negotiated on the SYN, blocks sent from the out-of-order ranges) and SACK-based loss recovery
// (RFC 6675: scoreboard, pipe, NextSeg rules 1 and 2), RACK-TLP (RFC 8985: losses deemed by
// send times, lost retransmissions included; Config::rack), CUBIC (RFC 9438) or Reno.
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "stack/clock.hpp"
#include "stack/tcp/config.hpp"
#include "stack/tcp/deadline_heap.hpp"
#include "stack/tcp/ooo.hpp"
#include "stack/tcp/ring.hpp"
#include "stack/tcp/rto.hpp"
#include "stack/tcp/sent_log.hpp"
#include "stack/wire/icmp.hpp"
#include "stack/wire/tcp.hpp"

namespace weft::stack::tcp {

enum class State : uint8_t {
  closed,
  syn_sent,
  syn_received,
  established,
  fin_wait_1,
  fin_wait_2,
  close_wait,
  closing,
  last_ack,
  time_wait,
};
const char* to_string(State s);

// Why a connection ended other than by an orderly close.
// `unreachable`: an ICMP error ended a connect (RFC 5461); `refused` also when it was port unreachable.
enum class CloseReason : uint8_t { none, refused, reset, timeout, aborted, unreachable };
const char* to_string(CloseReason r);

struct FourTuple {
  wire::Ipv4Addr local_ip;
  uint16_t local_port = 0;
  wire::Ipv4Addr remote_ip;
  uint16_t remote_port = 0;
  friend bool operator==(const FourTuple&, const FourTuple&) = default;
};

struct TupleHash {
  size_t operator()(const FourTuple& t) const noexcept {
    uint64_t x = (uint64_t{t.local_ip.v} << 32 | t.remote_ip.v) * 0x9e3779b97f4a7c15ULL;
    x ^= (uint64_t{t.local_port} << 16 | t.remote_port) * 0xc2b2ae3d27d4eb4fULL;
    return static_cast<size_t>(x ^ (x >> 29));
  }
};

class SegmentSink {
 public:
  virtual ~SegmentSink() = default;
  // The payload is p1 followed by p2; both stay valid only during the call.
  virtual void send_segment(const FourTuple& t, const wire::TcpHeader& h, wire::Bytes p1, wire::Bytes p2) = 0;
  // TSO (Config::tso_max): a segment whose payload exceeds `seg_size`, to go out as segments of
  // `seg_size` bytes, each with this header, the sequence number advanced, PSH and FIN only on the
  // last. This default cuts it here and calls send_segment for each piece.
  virtual void send_super_segment(const FourTuple& t, const wire::TcpHeader& h, wire::Bytes p1,
                                  wire::Bytes p2, uint32_t seg_size);
};

class Connection;
struct CookieOptions;  // syn_cookie.hpp

// Told after every public call that may have changed a connection (its timers, its buffers, its
// state): TcpLayer keeps its deadline heap with it, so nothing walks every connection.
class ConnectionWatcher {
 public:
  virtual ~ConnectionWatcher() = default;
  virtual void changed(Connection& c) = 0;
};

struct ConnectionStats {
  uint64_t segments_in = 0;
  uint64_t segments_out = 0;
  uint64_t bytes_acked = 0;
  uint64_t bytes_received = 0;
  uint64_t retransmits = 0;        // segments sent again, for any reason
  uint64_t fast_retransmits = 0;   // entries into fast recovery
  uint64_t early_retransmits = 0;  // of which on fewer than three dup ACKs (RFC 5827)
  uint64_t timeouts = 0;           // RTO expiries
  uint64_t dup_acks = 0;
  uint64_t out_of_order = 0;  // segments parked past a gap
  uint64_t challenge_acks = 0;
  uint64_t paws_drops = 0;
  uint64_t window_probes = 0;
  uint64_t tail_loss_probes = 0;  // RFC 8985 7: the last segment resent before the RTO
  uint64_t sack_retransmits = 0;  // holes resent by RFC 6675 NextSeg (rule 1)
  uint64_t sacked_bytes = 0;      // bytes the peer newly SACKed, summed over ACKs
  uint64_t rack_lost = 0;         // segments RACK (RFC 8985) deemed lost
  uint64_t lost_retransmits = 0;  // of which retransmissions lost again
  uint64_t icmp_errors = 0;       // ICMP errors that passed the RFC 5927 checks and were acted on
  uint64_t icmp_ignored = 0;      // ICMP errors quoting a sequence number not in flight (forged, old)
  uint64_t pmtu_reductions = 0;   // "fragmentation needed" lowered the MSS (RFC 1191)
  uint64_t dsacks_sent = 0;       // duplicates reported in a first SACK block (RFC 2883)
  uint64_t dsacks_received = 0;   // D-SACK blocks from the peer
  uint64_t spurious_undone = 0;   // recoveries whose every retransmission was D-SACKed: cwnd undone
};

class Connection {
 public:
  Connection(const Config& cfg, const Clock& clock, SegmentSink& sink, const FourTuple& tuple, uint32_t iss);

  // Active open: sends the SYN (state SYN-SENT).
  void connect();
  // Passive open from a listener: `syn` is the peer's SYN; answers with a SYN-ACK (SYN-RECEIVED).
  void accept_syn(const wire::TcpSegment& syn);
  // Passive open from a SYN cookie (syn_cookie.hpp): `ack` completes a handshake whose SYN-ACK the
  // listener sent without keeping anything (this connection's ISS is the cookie); `mss` and `o` are
  // what the cookie brought back of the peer's SYN. Goes through SYN-RECEIVED with the ACK (and
  // any data on it) as accept_syn then input would.
  void accept_cookie(const wire::TcpSegment& ack, uint16_t mss, const CookieOptions& o);
  // The TSval a connection with ISS `iss` sends at `now_ns`, and the receive window scale it
  // announces: a cookie's SYN-ACK must say what the connection made from it goes on with.
  static uint32_t ts_at(int64_t now_ns, uint32_t iss) {
    return static_cast<uint32_t>(now_ns / kMs) + ts_offset_for(iss);
  }
  static uint8_t rcv_wscale_for(const Config& cfg);

  // A segment for this connection.
  void input(const wire::TcpSegment& seg);
  // Where input() would store the payload of an in-order segment of `len` bytes at `seq`: the
  // receive ring's free space at its tail, when it holds `len` bytes in one piece and nothing is
  // held out of order past the tail (so the space holds nothing yet). A device can read the
  // payload straight there; input() then finds it in place and copies nothing. Bytes put there
  // that input() does not take (a segment it rejects or trims) stay unused free space. Empty
  // when the connection is not receiving data or the space is not there.
  wire::MutBytes rx_place(uint32_t seq, size_t len);
  // Runs the timers that are due.
  void poll();
  // When poll() next has work (INT64_MAX when none).
  int64_t next_deadline() const;

  // Queues bytes to send; returns how many fit in the send buffer.
  size_t send(wire::Bytes data);
  // Reads in-order bytes.
  size_t recv(wire::MutBytes out);
  // Zero-copy receive: the readable bytes in place (two pieces when the ring wraps), valid until
  // the next call on this connection; consume(n) then drops the first n of them.
  std::pair<wire::Bytes, wire::Bytes> recv_view() const { return rcv_ring_.peek(0, rcv_ring_.size()); }
  void consume(size_t n);
  // Zero-copy send: the free send-buffer space in place (two pieces when it wraps); write into
  // it, then send_commit(n) queues the first n bytes as send() would. Empty when send() would
  // take nothing.
  std::pair<wire::MutBytes, wire::MutBytes> send_reserve();
  size_t send_commit(size_t n);
  // Orderly close of our direction: a FIN after the queued data.
  void close();
  // Abort: sends RST and goes to CLOSED at once.
  void abort();
  // An ICMP error quoting a segment of this connection whose sequence number was `seq` (icmp.cpp):
  // acted on only when `seq` is in flight (SND.UNA <= seq < SND.MAX, RFC 5927 4.1), so a blind
  // attacker must guess it. In SYN-SENT an unreachable ends the connect (RFC 5461 4, as Linux and
  // the BSDs do); elsewhere it is a soft error, recorded and reported if the connection times out
  // (RFC 1122 4.2.3.9, RFC 5927 4.1). "Fragmentation needed" lowers the MSS to fit `mtu` (RFC
  // 1191; quoted_len gives the RFC 1191 7 plateau when the router sent no MTU). Returns whether it
  // was acted on.
  bool icmp_error(wire::IcmpErrorKind kind, uint32_t seq, uint16_t mtu, uint16_t quoted_len);
  // The last soft error an ICMP message reported (none when there was none).
  wire::IcmpErrorKind soft_error() const { return soft_error_; }
  // The last urgent byte received (RFC 9293 3.9), which left the stream unless Config::oob_inline;
  // nullopt when none came.
  std::optional<uint8_t> oob_byte() const {
    return has_oob_ ? std::optional<uint8_t>(oob_byte_) : std::nullopt;
  }

  State state() const { return state_; }
  CloseReason close_reason() const { return reason_; }
  const FourTuple& tuple() const { return tuple_; }
  const ConnectionStats& stats() const { return stats_; }
  // Bytes the application can read now, and whether the peer's FIN was read past (EOF).
  size_t readable() const { return rcv_ring_.size(); }
  bool peer_closed() const { return fin_received_ && rcv_ring_.size() == 0; }
  size_t send_space() const { return fin_queued_ ? 0 : snd_ring_.free(); }
  // send() may still queue data: not closed by close(), not ended.
  bool may_queue_data() const;
  bool is_closed() const { return state_ == State::closed; }
  // Established (or past it): the handshake completed.
  bool connected() const;

  void set_nagle(bool on) { cfg_.nagle = on; }
  // Keepalive for this connection (SO_KEEPALIVE, TCP_KEEPIDLE/INTVL/CNT): after `idle_ns` with
  // nothing received, a probe every `interval_ns`; `probes` unanswered ones end the connection
  // (SockErr::timed_out). Off: no probes. The idle time counts from the call.
  void set_keepalive(bool on, int64_t idle_ns, int64_t interval_ns, int probes);
  void set_watcher(ConnectionWatcher* w) { watcher_ = w; }
  // An opaque value for whoever owns the connection (the socket table's handle).
  uint64_t tag() const { return tag_; }
  void set_tag(uint64_t t) { tag_ = t; }
  // Memory this connection holds: the object, and its rings and send log once allocated.
  size_t memory() const {
    return sizeof(*this) + snd_ring_.allocated() + rcv_ring_.allocated() + sent_.allocated();
  }

  // Introspection for tests and statistics.
  uint32_t cwnd() const { return cwnd_; }
  uint32_t ssthresh() const { return ssthresh_; }
  const CongestionControl& congestion_control() const { return cc_; }
  uint32_t send_mss() const { return smss_; }
  uint32_t snd_wnd() const { return snd_wnd_; }
  uint32_t bytes_in_flight() const { return snd_nxt_ - snd_una_; }
  bool in_recovery() const { return in_recovery_; }
  const RtoEstimator& rto() const { return rto_; }
  bool timestamps_on() const { return ts_on_; }
  uint8_t snd_wscale() const { return snd_wscale_; }
  uint8_t rcv_wscale() const { return rcv_wscale_; }
  bool sack_on() const { return sack_on_; }
  // RACK (RFC 8985) decides losses: on when SACK is (it needs SACKed sends) and Config::rack.
  bool rack_on() const { return sack_on_ && cfg_.rack; }
  // RFC 6675 pipe: the sender's estimate of the bytes still in the network.
  uint32_t pipe() const;

 private:
  friend class TcpLayer;
  // A timer that is off (the deadlines below).
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  static constexpr uint32_t kMaxCwnd = 1u << 30;
  struct Notify {  // calls the watcher when a public call returns (here: icmp.cpp uses it too)
    Connection& c;
    ~Notify() {
      if (c.watcher_ != nullptr) c.watcher_->changed(c);
    }
  };
  bool synchronized() const;
  void after_read(size_t n, uint32_t adv_before);
  uint32_t now_ts() const;
  // Per-connection timestamp offset (RFC 7323 5.4), fixed by the ISS.
  static uint32_t ts_offset_for(uint32_t iss) { return iss * 2654435761u; }
  uint32_t rcv_window() const;
  uint16_t window_field();
  void apply_syn_options(const wire::TcpOptions& o);
  void fill_options(wire::TcpHeader& h, bool syn);

  // Output (output.cpp).
  void output();
  void send_syn(bool with_ack);
  uint32_t acceptable_seq() const;  // SEQ for a segment without data: inside the peer's window
  void send_ack();
  void send_rst(uint32_t seq);
  void send_probe();  // zero window probe / keepalive: ack-eliciting, no data
  // seg_size > 0: the payload may be a TSO super-segment of pieces that size.
  void emit(wire::TcpHeader& h, wire::Bytes p1, wire::Bytes p2, uint32_t seg_size = 0);
  // The payload a segment may carry now: smss_ less the SACK blocks it will carry.
  uint32_t mss_now() const;
  // Sends [seq, seq + len) of the send ring (plus the FIN when it reaches the end and one was
  // sent or is to be sent); counts a retransmission when below snd_max_.
  void send_range(uint32_t seq, uint32_t len, bool fin, bool push);
  // send_range at snd_nxt_, which then moves past it (and snd_max_ with it); arms the RTO.
  void send_at_nxt(uint32_t len, bool fin, bool push);
  void retransmit_head();
  uint32_t data_end() const { return snd_una_ + static_cast<uint32_t>(snd_ring_.size()); }

  // Input steps (RFC 9293 3.10.7; input.cpp).
  void input_syn_sent(const wire::TcpSegment& seg);
  bool acceptable(const wire::TcpSegment& seg) const;
  bool process_ack(const wire::TcpSegment& seg);
  void process_data(const wire::TcpSegment& seg);
  size_t store(uint32_t seq, wire::Bytes data);  // past the tail, never over held bytes
  void note_urgent(const wire::TcpSegment& seg);
  void take_urgent_byte(uint32_t from);
  void on_new_ack(uint32_t ack, uint32_t acked);

  // Loss recovery: fast retransmit and SACK (RFC 5681, 6582, 2018 / 6675; recovery.cpp).
  void on_dup_ack();
  uint32_t dupack_threshold() const;
  uint32_t take_sack_blocks(const wire::TcpOptions& o, uint32_t ack_seq);  // bytes newly SACKed
  uint32_t lost_below() const;  // un-SACKed bytes below it are lost
  bool sack_recovery_send();    // NextSeg while cwnd - pipe >= SMSS
  void enter_recovery();

  // D-SACK (RFC 2883, dsack.cpp): the receiver's report of a duplicate, and the sender's undo of a
  // recovery whose retransmissions all turned out to be duplicates (RFC 3708; Linux's undo).
  void note_duplicate(uint32_t left, uint32_t right);
  bool check_dsack(const wire::TcpOptions& o, uint32_t ack);  // true when the first block is one
  void undo_start();                                          // a recovery or a timeout begins an episode
  void undo_note_retransmit(uint32_t seq, uint32_t end);
  void try_undo();

  // RACK (RFC 8985): the send log, loss detection by send times and the reordering timer.
  void rack_log_send(uint32_t seq, uint32_t end);
  void rack_on_ack(const wire::TcpOptions& o, uint32_t ack);  // marks SACKed and delivered sends
  uint32_t rack_detect_loss();                                // bytes newly deemed lost
  int64_t rack_reo_wnd() const;
  // RFC 8985 6.2 step 4: D-SACKs widen the reordering window; `left_recovery`: this ACK ended one.
  void rack_update_reo_wnd(bool dsack, bool left_recovery);
  bool rack_send_lost(bool force = false);  // resends the first lost segment if cwnd - pipe >= SMSS
  void rack_after_detect(uint32_t newly_lost);

  // Timers.
  void on_rtx_timeout();
  void arm_rtx();
  void arm_tlp();
  void on_tlp();
  void enter_time_wait();
  void terminate(CloseReason why);
  // Path MTU discovery (RFC 1191): the MSS for a path MTU of `mtu`; what was sent larger goes again.
  void lower_path_mtu(uint32_t mtu);

  Config cfg_;
  const Clock& clock_;
  SegmentSink& sink_;
  FourTuple tuple_;
  State state_ = State::closed;
  CloseReason reason_ = CloseReason::none;
  ConnectionStats stats_;

  // Send sequence space.
  uint32_t iss_;
  uint32_t snd_una_;
  uint32_t snd_nxt_;
  uint32_t snd_max_;  // highest sequence sent + 1
  uint32_t snd_wnd_ = 0;
  uint32_t max_snd_wnd_ = 0;
  uint32_t snd_wl1_ = 0;
  uint32_t snd_wl2_ = 0;
  uint32_t smss_ = 536;  // RFC 9293 3.7.1: the default without an MSS option
  uint8_t snd_wscale_ = 0;
  bool ws_on_ = false;       // both sides sent a window scale option
  bool fin_queued_ = false;  // close() called: a FIN follows the data
  bool fin_sent_ = false;    // the FIN has a sequence number (data_end())
  ByteRing snd_ring_;

  // Receive sequence space.
  uint32_t irs_ = 0;
  uint32_t rcv_nxt_ = 0;
  uint32_t rcv_adv_ = 0;  // right edge of the window last advertised
  uint8_t rcv_wscale_ = 0;
  bool fin_received_ = false;
  bool ooo_fin_ = false;  // a FIN arrived past a gap, at ooo_fin_seq_
  uint32_t ooo_fin_seq_ = 0;
  ByteRing rcv_ring_;
  OooRanges ooo_;

  // SACK: negotiated on the SYN; what the peer SACKed above snd_una_; the highest byte
  // retransmitted in this recovery + 1 (RFC 6675 HighRxt).
  bool sack_on_ = false;
  SackScoreboard sacked_;
  uint32_t high_rxt_ = 0;

  // RACK (RFC 8985 6.1): every segment in flight with its send time; the send time and end of
  // the most recently sent segment delivered (RACK.xmit_ts, RACK.end_seq), its RTT, the minimum
  // RTT, the highest end delivered (RACK.fack) and whether reordering was seen.
  SentLog sent_;
  int64_t rack_xmit_ns_ = -1;  // -1: nothing delivered yet
  uint32_t rack_end_ = 0;
  int64_t rack_rtt_ns_ = 0;
  int64_t rack_min_rtt_ns_;
  uint32_t rack_fack_ = 0;
  bool rack_reordering_seen_ = false;
  // RACK.reo_wnd_mult, RACK.dsack_round (while rack_dsack_round_on_) and RACK.reo_wnd_persist.
  uint32_t rack_reo_wnd_mult_ = 1;
  uint32_t rack_dsack_round_ = 0;
  bool rack_dsack_round_on_ = false;
  int rack_reo_wnd_persist_ = 0;

  // Timestamps (RFC 7323).
  bool ts_on_ = false;
  bool peer_offered_ts_ = false;
  uint32_t ts_recent_ = 0;
  uint32_t last_ack_sent_ = 0;
  uint32_t ts_offset_ = 0;

  // Congestion control (RFC 5681 / 6582 / 6675; growth past ssthresh and ssthresh after a loss
  // by CUBIC or Reno).
  CongestionControl cc_;
  uint32_t cwnd_ = 0;
  uint32_t ssthresh_ = 0x7fffffff;
  uint32_t dupacks_ = 0;
  uint32_t lt_base_ = 0;  // snd_max_ at the first dup ACK: what limited transmit sent is past it
  bool in_recovery_ = false;
  uint32_t recover_ = 0;

  // RTT measurement: one timed segment at a time (Karn: never a retransmitted one).
  RtoEstimator rto_;
  bool rtt_active_ = false;
  uint32_t rtt_seq_ = 0;
  int64_t rtt_start_ns_ = 0;

  // Timers (absolute ns; kNever when off).
  int64_t rtx_deadline_;
  int retries_ = 0;
  int64_t tlp_deadline_;
  int64_t rack_deadline_;  // RACK's reordering timer (RFC 8985 6.2 step 5)
  // Set when a record is marked lost, cleared when rack_send_lost finds none left to resend: the
  // send loop then skips that scan of the whole log (and pipe()'s) for every segment, which made
  // output quadratic in the segments in flight (4 MiB buffers: ~2,900 records per segment sent).
  bool rack_maybe_lost_ = false;
  // Likewise for any record marked lost at all (rack_after_detect's question), and for any
  // record with a mark (SACKed, lost, resent): without one pipe() is simply SND.MAX - SND.UNA.
  bool rack_any_lost_ = false;
  mutable bool rack_any_marked_ = false;
  bool tlp_out_ = false;  // a probe was sent and no ACK has moved SND.UNA since
  int64_t delack_deadline_;
  uint32_t segs_unacked_ = 0;  // full segments received since our last ACK
  bool ack_now_ = false;
  // TcpLayer's receive batch (one wake-up's frames): a pure ACK for in-order data waits for the
  // batch's end (TcpLayer::end_batch), so a burst is acknowledged once, as after Linux's GRO.
  bool hold_ack_ = false;
  bool ack_held_ = false;  // one is waiting (the connection is on TcpLayer's held list)
  int64_t persist_deadline_;
  int persist_backoff_ = 0;
  int64_t keepalive_deadline_;
  int keepalive_sent_ = 0;
  int64_t time_wait_deadline_;
  // The last segment from the peer, or when keepalive was last set (idle counts from then).
  int64_t last_heard_ns_ = 0;

  wire::IcmpErrorKind soft_error_ = wire::IcmpErrorKind::none;

  // Urgent data (RFC 9293 3.9): the byte the peer's urgent pointer names, until it arrives; the
  // last one that did.
  bool urg_pending_ = false;
  uint32_t urg_seq_ = 0;
  bool has_oob_ = false;
  uint8_t oob_byte_ = 0;

  // D-SACK, receiver: a duplicate to report in the first SACK block of the next segment.
  bool dsack_pending_ = false;
  SeqRange dsack_;
  // D-SACK, sender (RFC 3708 detection, Linux's tcp_try_undo_dsack): the episode that may be undone
  // (from the fast retransmit or first timeout that began it until the next one), cwnd and ssthresh
  // before it, what it retransmitted and how much of that the peer reported as duplicates. An
  // episode resending a range twice, or more ranges than the set holds, is never undone.
  bool undo_open_ = false;
  uint32_t prior_cwnd_ = 0;
  uint32_t prior_ssthresh_ = 0;
  SeqRangeSet<16> undo_rtx_;
  SeqRangeSet<16> undo_dsacked_;

  ConnectionWatcher* watcher_ = nullptr;
  uint64_t tag_ = 0;
  // TcpLayer's: the place in its deadline heap, whether the application released the connection
  // and whether it is queued to be freed.
  HeapSlot heap_;
  bool released_ = false;
  bool reaping_ = false;
};

// The reply to a segment that reaches no connection (RFC 9293 3.10.7.1): nothing to an RST,
// else <SEQ=SEG.ACK><CTL=RST> when it has ACK, or <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>.
// Returns false when nothing is to be sent.
bool reset_for(const wire::TcpSegment& seg, wire::TcpHeader& out);

}  // namespace weft::stack::tcp
