#pragma once
// The TCP layer of one stack: demultiplexes segments to connections by 4-tuple, runs listeners
// (half-open connections capped at the backlog; past it, SYN cookies (syn_cookie.hpp): a SYN
// flood costs no memory and a real client still gets in at once), answers segments that reach
// nothing with an RST (RFC 9293 3.10.7.1),
// picks ephemeral ports and ISNs (RFC 6528), and frees connections the application released once
// they are closed. Connections are allocated when created, never per segment.
//
// Timers: every connection tells the layer when a call changed it (ConnectionWatcher), and the
// layer keeps the ones with a deadline in a heap, so poll() touches only those that are due and
// next_deadline() is O(1) (10,000 idle connections cost nothing per poll).
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "base/result.hpp"
#include "stack/tcp/connection.hpp"
#include "stack/tcp/deadline_heap.hpp"
#include "stack/tcp/isn.hpp"
#include "stack/tcp/syn_cookie.hpp"
#include "stack/tcp/time_wait.hpp"

namespace weft::stack::tcp {

struct TcpLayerStats {
  uint64_t resets_sent = 0;       // answers to segments for no connection
  uint64_t syns_dropped = 0;      // a listener's accept queue was full
  uint64_t cookies_sent = 0;      // SYN-ACKs with a SYN cookie: the SYN queue was full
  uint64_t cookies_accepted = 0;  // ACKs that carried a valid cookie: connections made from them
  uint64_t cookies_rejected = 0;  // ACKs to a listener that carried none (answered with an RST)
  uint64_t connections_made = 0;
  uint64_t timer_runs = 0;          // connections whose timers poll() ran (only due ones are visited)
  uint64_t icmp_no_connection = 0;  // ICMP errors quoting a segment of no connection
  uint64_t time_wait_reopened = 0;  // SYNs that ended a TIME-WAIT of the same 4-tuple (RFC 6191)
  uint64_t time_wait_overflow = 0;  // closed without TIME-WAIT: the table was full (Config::max_time_wait)
};

// Told what the network or a timer did (the socket layer turns it into events).
class TcpObserver {
 public:
  virtual ~TcpObserver() = default;
  // A segment or a timer ran on `c` (it may have data, space, or have closed).
  virtual void on_activity(Connection& c) = 0;
  // A connection joined the accept queue of `port`.
  virtual void on_acceptable(uint16_t port) = 0;
};

class TcpLayer final : private ConnectionWatcher {
 public:
  TcpLayer(const Config& cfg, const Clock& clock, SegmentSink& sink, uint64_t secret0, uint64_t secret1);
  ~TcpLayer() override;

  // Accepts connections to `port` on any local address. At most `backlog` half-open at a time
  // (each a Connection without rings: Connection::memory()); SYNs beyond that are answered with a
  // SYN cookie and cost nothing. At most `backlog` established and not yet accepted: SYNs and
  // cookie ACKs beyond that are dropped (the peer retries), as Linux's full accept queue does.
  Status listen(uint16_t port, size_t backlog = 128);
  // Stops listening: connections not yet accepted are reset and freed.
  void unlisten(uint16_t port);
  // The next established connection on `port` not yet accepted, or nullptr.
  Connection* accept(uint16_t port);
  size_t acceptable(uint16_t port) const;
  // Active open from `local_ip` and a free ephemeral port.
  Result<Connection*> connect(wire::Ipv4Addr local_ip, wire::Ipv4Addr remote_ip, uint16_t remote_port);

  // A segment the IP layer received, already parsed and checksummed.
  void input(wire::Ipv4Addr src, wire::Ipv4Addr dst, const wire::TcpSegment& seg);
  // Connection::rx_place for the connection of `t` (empty when there is none).
  wire::MutBytes rx_place(const FourTuple& t, uint32_t seq, size_t len) {
    auto it = conns_.find(t);
    return it == conns_.end() ? wire::MutBytes{} : it->second.conn->rx_place(seq, len);
  }
  // The same at the connection's next expected sequence number, which goes to `seq`.
  wire::MutBytes rx_place_next(const FourTuple& t, size_t len, uint32_t& seq) {
    auto it = conns_.find(t);
    if (it == conns_.end()) return {};
    seq = it->second.conn->rcv_nxt_;
    return it->second.conn->rx_place(seq, len);
  }
  // An ICMP error quoting a TCP segment we sent (Connection::icmp_error checks and acts on it).
  void icmp_error(const wire::IcmpQuote& q, wire::IcmpErrorKind kind, uint16_t mtu);
  // A receive batch (the frames of one wake-up): between begin_batch() and end_batch() pure ACKs
  // for in-order data are held, and end_batch() sends one per connection. A sender that got an
  // ACK per frame (2-3 segments) answered each with a small burst; one ACK per batch lets it
  // send TSO-sized bursts (docs/BENCHMARKS.md, "User-space TCP/IP stack").
  void begin_batch() { batching_ = true; }
  void end_batch();
  bool holds_acks() const { return !held_.empty(); }  // end_batch() has ACKs to send
  // Runs the timers that are due (only those connections), and ends the TIME-WAITs that are over.
  void poll();
  // The next connection timer. The end of a TIME-WAIT is not one: it waits for the next poll()
  // (no wake-up of its own; a SYN for it after its end finds it over).
  int64_t next_deadline() const { return timers_.top_at(); }

  // The application is done with `c`: it is freed once closed (TIME-WAIT runs its course first).
  void release(Connection* c);

  void set_observer(TcpObserver* o) { observer_ = o; }
  // Connections (TIME-WAIT ones the application let go are not: they wait in a compact table).
  size_t connection_count() const { return conns_.size(); }
  size_t time_wait_count() const { return time_wait_.size(); }
  size_t timers_pending() const { return timers_.size(); }
  const TcpLayerStats& stats() const { return stats_; }
  const Config& config() const { return cfg_; }

 private:
  struct Entry {
    std::unique_ptr<Connection> conn;
    uint16_t listener = 0;  // port of the listener that made it, 0 for active opens
    bool queued = false;    // put on the listener's accept queue
  };
  struct Listener {
    size_t backlog = 0;
    size_t half_open = 0;
    std::deque<Connection*> ready;
    // When the last cookie was sent: ACKs are checked for one only within 2 periods of it (Linux's
    // tcp_synq_no_recent_overflow), so a listener that never overflowed accepts no guessed cookie.
    int64_t last_cookie_ns = -1;
  };
  using ConnMap = std::unordered_map<FourTuple, Entry, TupleHash>;
  void changed(Connection& c) override;
  // `c` was let go in TIME-WAIT: its wait goes on in time_wait_, and the Connection is freed.
  void to_time_wait(Connection& c);
  Connection& create(const FourTuple& t, Entry& e, std::optional<uint32_t> iss = std::nullopt);
  void send_cookie(const FourTuple& t, const wire::TcpSegment& syn, Listener& l);
  // An ACK to a listener with no connection: a connection when it carries a valid cookie.
  bool accept_cookie(const FourTuple& t, const wire::TcpSegment& seg, Listener& l);
  void after_input(Entry& e);
  // Takes a connection that no longer answers for its 4-tuple (closed, or its TIME-WAIT ended) out
  // of conns_ into retired_, where it stays until the application releases it.
  void detach(ConnMap::iterator it);
  void reap();

  Config cfg_;
  const Clock& clock_;
  SegmentSink& sink_;
  IsnGenerator isn_;
  SynCookies cookies_;
  ConnMap conns_;
  TimeWaitTable time_wait_;
  std::unordered_map<uint16_t, Listener> listeners_;
  DeadlineHeap<Connection, &Connection::heap_> timers_;
  std::vector<Connection*> due_;  // poll()'s scratch list, kept to avoid allocating
  std::vector<FourTuple> dead_;   // released and closed: freed by reap()
  std::vector<Entry> retired_;    // detached from their 4-tuple: freed by reap() once released
  TcpObserver* observer_ = nullptr;
  bool busy_ = false;              // input(), poll() or unlisten() hold pointers to connections: reap() waits
  bool batching_ = false;          // in a receive batch: held_ holds pointers too
  std::vector<Connection*> held_;  // connections with an ACK held for end_batch()
  uint16_t next_port_ = 49152;
  TcpLayerStats stats_;
};

}  // namespace weft::stack::tcp
