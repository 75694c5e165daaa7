#pragma once
// A socket-like API over one Interface: TCP listen/accept/connect/send/recv/close and UDP
// bind/sendto/recvfrom, non-blocking, with one event fd for epoll.
//
// Sockets are handles (SockId: a slot and a generation, so a closed handle never reaches a
// newer socket in the same slot). Every call returns at once; "would block" is SockErr::again.
// Errors are SockErr values (reset, refused, timed_out, ...), never exceptions.
//
// Events (edge-style, like EPOLLET): when the network or a timer gives a socket news (data, room
// to send after a send came up short, a connection to accept, the end of a connection, an
// error), the socket is put on a ready list and event_fd() (an eventfd) becomes readable.
// events() hands the list out and clears the fd once it is empty; the application then reads or
// accepts until SockErr::again. The stack itself is driven by poll() (frames and timers):
// call it when device_fd() (or device_aux_fd()) is readable or next_deadline() has passed, or let
// wait() do both.
//
// Zero copy: recv_view() shows the received bytes in the connection's ring and consume(n) drops
// them; send_reserve() shows the free send-ring space to write into and send_commit(n) queues it.
// Segments then leave from the ring with one copy into the frame (as send() does).
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/event_fd.hpp"
#include "stack/interface.hpp"
#include "stack/sock_error.hpp"
#include "stack/udp_queue.hpp"

namespace weft::stack {

using SockId = uint64_t;  // 0 is never a socket

namespace sockev {
inline constexpr uint32_t readable = 1;    // data to read, or the peer's FIN (recv returns 0)
inline constexpr uint32_t writable = 2;    // a connect completed, or room after a short send
inline constexpr uint32_t acceptable = 4;  // a listener has connections to accept
inline constexpr uint32_t hangup = 8;      // the connection has ended (both directions closed)
inline constexpr uint32_t error = 16;      // it ended in error: error() says which
}  // namespace sockev

struct SockEvent {
  SockId id = 0;
  uint32_t events = 0;
};

struct SocketsConfig {
  size_t udp_recv_buffer = 256 * 1024;  // each UDP socket's queue, allocated on the first datagram
};

class Sockets final : private tcp::TcpObserver, private UdpReceiver {
 public:
  explicit Sockets(Interface& iface, const SocketsConfig& cfg = {});
  ~Sockets() override;
  Sockets(const Sockets&) = delete;
  Sockets& operator=(const Sockets&) = delete;

  // Readable while some socket has news (see events()); -1 if the eventfd could not be made.
  // Made on the first call: an application that only calls wait()/events() pays no eventfd
  // write and read per wake-up.
  int event_fd();
  int device_fd() const { return iface_.device_fd(); }
  int device_aux_fd() const { return iface_.device_aux_fd(); }  // readable too when frames wait (-1: none)

  // Reads what frames wait and runs due timers; what they made leaves at once.
  void poll(size_t rx_budget = 256);
  // The same, but what they made waits in the device's batch for the caller's flush (an event
  // loop that sends its answers next puts both in one batch).
  void poll_no_flush(size_t rx_budget = 256);
  int64_t next_deadline() const { return iface_.next_deadline(); }
  // Sleeps until the device has frames, a timer is due or `max_wait_ns` passed, then poll()s.
  void wait(int64_t max_wait_ns);

  // TCP (send and recv also on a connected UDP socket: one datagram each).
  SockResult<SockId> listen(uint16_t port, size_t backlog = 128);
  SockResult<SockId> accept(SockId listener);
  SockResult<SockId> connect(wire::Ipv4Addr dst, uint16_t port);
  SockResult<size_t> send(SockId s, wire::Bytes data);
  // Bytes read; 0 means the peer closed its direction (end of stream).
  SockResult<size_t> recv(SockId s, wire::MutBytes out);
  // Zero copy: the readable bytes in place (valid until the next call on `s`); two empty pieces
  // at the end of stream.
  SockResult<std::pair<wire::Bytes, wire::Bytes>> recv_view(SockId s);
  SockResult<void> consume(SockId s, size_t n);
  SockResult<std::pair<wire::MutBytes, wire::MutBytes>> send_reserve(SockId s);
  SockResult<size_t> send_commit(SockId s, size_t n);
  SockResult<void> set_nagle(SockId s, bool on);
  SockResult<void> set_keepalive(SockId s, bool on, int64_t idle_ns, int64_t interval_ns, int probes);
  // The connection behind `s` (statistics, state), or nullptr.
  const tcp::Connection* connection(SockId s) const;

  // UDP. bind(0) picks a free ephemeral port.
  SockResult<SockId> udp_bind(uint16_t port);
  SockResult<size_t> sendto(SockId s, wire::Ipv4Addr dst, uint16_t port, wire::Bytes payload);
  // `peek` (MSG_PEEK): the datagram stays queued for the next call.
  SockResult<DatagramInfo> recvfrom(SockId s, wire::MutBytes out, bool peek = false);
  // connect() for UDP (as Linux's): `dst`:`port` becomes the default destination of send(), and
  // only datagrams from it are received (recv() then reads them). An ICMP port (or protocol)
  // unreachable quoting a datagram to it is reported once by the next send/recv/sendto/recvfrom as
  // SockErr::refused (unreachable), with a readable and error event. An unspecified `dst`
  // dissolves the association.
  SockResult<void> udp_connect(SockId s, wire::Ipv4Addr dst, uint16_t port);

  // TCP half-close (shutdown(SHUT_WR)): a FIN after the queued data; the handle stays, to read
  // what the peer still sends and to see the connection end.
  SockResult<void> shutdown(SockId s);

  // Any socket: an orderly close (TCP: a FIN after the queued data; the connection finishes in
  // the background) and the handle is gone. abort() resets a TCP connection instead.
  void close(SockId s);
  void abort(SockId s);
  // Why a socket ended in error (SockErr::again while it has not).
  SockErr error(SockId s) const;
  uint16_t local_port(SockId s) const;
  // The events `s` would report now (level view, for tests and simple loops).
  uint32_t state(SockId s) const;

  // Sockets with news, at most out.size() of them; each is reported once per piece of news.
  size_t events(std::span<SockEvent> out);
  size_t open_sockets() const { return open_; }
  Interface& iface() { return iface_; }

 private:
  enum class Kind : uint8_t { free, listener, tcp, udp };
  struct Slot {
    uint32_t gen = 1;
    Kind kind = Kind::free;
    bool ready = false;       // on the ready list
    bool want_write = false;  // report writable when room appears
    uint16_t port = 0;
    tcp::Connection* conn = nullptr;
    std::unique_ptr<UdpQueue> udp;
    // UDP: the connected peer (port 0: not connected) and an error an ICMP message left to report
    // (again: none).
    wire::Ipv4Addr peer;
    uint16_t peer_port = 0;
    SockErr udp_err = SockErr::again;
  };

  void on_activity(tcp::Connection& c) override;
  void on_acceptable(uint16_t port) override;
  void on_datagram(wire::Ipv4Addr src, uint16_t src_port, uint16_t dst_port, wire::Bytes payload) override;
  void on_icmp_error(uint16_t local_port, wire::Ipv4Addr dst, uint16_t dst_port,
                     wire::IcmpErrorKind kind) override;
  // The pending ICMP error of a UDP socket, taken (reported once, as Linux's sock_error()).
  std::optional<SockErr> take_udp_error(Slot& s);

  Slot* find(SockId s);
  const Slot* find(SockId s) const;
  Slot* find(SockId s, Kind k);
  SockId make_id(uint32_t index) const { return uint64_t{slots_[index].gen} << 32 | (index + 1); }
  uint32_t alloc(Kind k);
  void free_slot(uint32_t index);
  void mark(uint32_t index);
  uint32_t level(const Slot& s) const;
  SockErr conn_error(const tcp::Connection& c) const;
  // A closed or erroring connection's answer to send/recv, if any.
  std::optional<SockErr> dead(const tcp::Connection& c) const;

  Interface& iface_;
  SocketsConfig cfg_;
  EventFd efd_;  // made by event_fd()
  bool efd_set_ = false;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  std::vector<uint32_t> ready_;
  std::unordered_map<uint16_t, uint32_t> listeners_;  // port -> slot
  std::unordered_map<uint16_t, uint32_t> udp_ports_;  // port -> slot
  size_t open_ = 0;
};

}  // namespace weft::stack
