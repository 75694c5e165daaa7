#pragma once
// One IPv4 interface on one device: ARP (answers for its address, resolves next hops, parks a
// few frames while it does), IPv4 with reassembly, routing to the local subnet or one gateway,
// ICMP echo (answers pings, sends its own), UDP to bound ports (ICMP port unreachable, rate
// limited, for the others), and the TCP layer above it. Single-threaded and poll-driven: poll_rx() reads
// frames, poll_timers() runs timers, next_deadline() says when. Frames are built in one preallocated buffer
// and the transport checksum is left to the device when it offers that.
#include <array>
#include <functional>
#include <unordered_map>
#include <vector>

#include "stack/arp_cache.hpp"
#include "stack/clock.hpp"
#include "stack/dev/device.hpp"
#include "stack/tcp/tcp_layer.hpp"
#include "stack/wire/frame.hpp"
#include "stack/wire/icmp.hpp"
#include "stack/wire/ipv4_reassembly.hpp"

namespace weft::stack {

struct IfaceConfig {
  wire::Ipv4Addr ip;
  uint8_t prefix_len = 24;
  wire::Ipv4Addr gateway;  // unspecified: only the local subnet is reachable
  tcp::Config tcp;
  uint64_t secret0 = 0, secret1 = 0;  // ISN secret; 0 and 0 take one from the kernel
  bool tso = true;  // hand TCP super-segments to a device that can cut them (Device::tso_max)
};

struct IfaceStats {
  uint64_t rx_frames = 0;
  uint64_t rx_placed = 0;  // of those, large frames whose TCP payload the device read into its ring
  uint64_t tx_frames = 0;
  uint64_t rx_bad = 0;        // failed to parse (truncated, bad checksum, ...)
  uint64_t rx_not_ours = 0;   // another address, another EtherType
  uint64_t arp_requests = 0;  // sent
  uint64_t arp_replies = 0;   // sent
  uint64_t echo_replies = 0;  // sent
  uint64_t no_route = 0;
  uint64_t parked_dropped = 0;   // frames waiting for ARP that had to be given up
  uint64_t arp_unreachable = 0;  // of those, no answer in 3 s: host unreachable told to their sender
  uint64_t udp_received = 0;
  uint64_t udp_no_port = 0;     // to a port nothing is bound to
  uint64_t udp_fragmented = 0;  // datagrams sent in fragments (larger than the MTU)
  uint64_t fragments_sent = 0;
  uint64_t icmp_unreach_sent = 0;     // port unreachable answers (RFC 1122 4.1.3.1)
  uint64_t icmp_rate_limited = 0;     // of those, not sent for the rate limit
  uint64_t icmp_errors_received = 0;  // destination unreachable / time exceeded
  uint64_t icmp_errors_not_ours = 0;  // of those, quoting a datagram we did not send (or no quote)
  uint64_t tx_errors = 0;
};

// Where datagrams to a bound UDP port go.
class UdpReceiver {
 public:
  virtual ~UdpReceiver() = default;
  // `payload` is valid only during the call.
  virtual void on_datagram(wire::Ipv4Addr src, uint16_t src_port, uint16_t dst_port, wire::Bytes payload) = 0;
  // An ICMP error quoting a datagram this port sent to `dst`:`dst_port`.
  virtual void on_icmp_error(uint16_t /*local_port*/, wire::Ipv4Addr /*dst*/, uint16_t /*dst_port*/,
                             wire::IcmpErrorKind /*kind*/) {}
};

class Interface final : public tcp::SegmentSink {
 public:
  Interface(Device& dev, const Clock& clock, const IfaceConfig& cfg);

  size_t poll_rx(size_t budget = 64);
  void poll_timers();
  int64_t next_deadline() const;

  tcp::TcpLayer& tcp() { return tcp_; }
  wire::Ipv4Addr ip() const { return cfg_.ip; }
  const Clock& clock() const { return clock_; }
  const IfaceStats& stats() const { return stats_; }

  // Sends an ICMP echo request with `payload_len` bytes of pattern.
  Status ping(wire::Ipv4Addr dst, uint16_t ident, uint16_t seq, size_t payload_len);
  using EchoReplyFn = std::function<void(wire::Ipv4Addr from, uint16_t ident, uint16_t seq, size_t len)>;
  void on_echo_reply(EchoReplyFn f) { echo_fn_ = std::move(f); }

  // UDP: datagrams to `port` go to `r` (port 0: a free ephemeral one); returns the port.
  Result<uint16_t> udp_bind(uint16_t port, UdpReceiver* r);
  void udp_unbind(uint16_t port);
  // One datagram from our address, in fragments when it exceeds the MTU (RFC 791), so up to
  // 65,507 bytes. UDP goes without DF (as Linux's IP_PMTUDISC_DONT): there is no per-destination
  // path MTU to learn it into, so a router on a narrower path fragments it instead of dropping it.
  Status send_udp(uint16_t src_port, wire::Ipv4Addr dst, uint16_t dst_port, wire::Bytes payload);
  size_t udp_max_payload() const { return wire::kIpv4MaxPacket - wire::kIpv4Header - 8; }
  // The largest payload one unfragmented datagram carries.
  size_t udp_unfragmented_payload() const { return dev_.mtu() - wire::kIpv4Header - 8; }
  bool routable(wire::Ipv4Addr dst) const {
    wire::Ipv4Addr hop;
    return next_hop(dst, hop);
  }
  int device_fd() const { return dev_.fd(); }
  int device_aux_fd() const { return dev_.aux_fd(); }  // waited on with device_fd() (Device::aux_fd)
  // Sends what a batching device (AF_PACKET) holds back; call before waiting for input.
  void flush() { dev_.flush(); }

  void send_segment(const tcp::FourTuple& t, const wire::TcpHeader& h, wire::Bytes p1,
                    wire::Bytes p2) override;
  void send_super_segment(const tcp::FourTuple& t, const wire::TcpHeader& h, wire::Bytes p1, wire::Bytes p2,
                          uint32_t seg_size) override;

 private:
  struct Parked {
    bool used = false;
    wire::Ipv4Addr hop;
    int64_t since = 0;
    size_t len = 0;
    TxOffload off;
    std::vector<uint8_t> frame;
  };
  void handle_frame(wire::Bytes frame, bool csum_ok);
  bool place_large_frame();
  static constexpr size_t kSplitRun = 16;        // large frames read by one receive_split_run()
  static constexpr size_t kSplitHeadRoom = 256;  // rx_ bytes for each one's headers
  // One frame from a device with scatter receive (Device::rx_scatter): its payload read straight
  // into the receive ring of the flow that took the last in-order data, when the guess holds.
  // 0: nothing waiting; 1: a frame was taken; -1: the device failed.
  int receive_scattered();
  // The frame of `len` bytes whose first `hdr` bytes are in rx_ and whose rest was read to
  // `place`, at `seq` of hot_'s connection: given to TCP in place when it is the in-order segment
  // the place was for (true); false when the guess was wrong (nothing done).
  bool take_scattered(size_t hdr, size_t len, wire::MutBytes place, uint32_t seq, bool csum_ok);
  void handle_arp(const wire::ArpPacket& a);
  // `raw` is the whole IP packet when it came in one frame (quoted in ICMP errors), else empty.
  void handle_l4(const wire::Ipv4Packet& ip, wire::Bytes payload, bool csum_ok, wire::Bytes raw);
  void handle_udp(const wire::Ipv4Packet& ip, wire::Bytes payload, bool csum_ok, wire::Bytes raw);
  void send_port_unreachable(const wire::Ipv4Packet& ip, wire::Bytes raw);
  void handle_icmp_error(const wire::Ipv4Packet& ip, const wire::IcmpMessage& m);
  // An ICMP error (received, or made here) quoting a datagram this stack sent, to its transport.
  void deliver_icmp_error(const wire::IcmpQuote& q, wire::IcmpErrorKind kind, uint16_t mtu);
  bool is_ours(wire::Ipv4Addr dst) const;
  bool next_hop(wire::Ipv4Addr dst, wire::Ipv4Addr& hop) const;
  // Sends the IPv4 packet of `ip_len` bytes at tx_[14...] (its header already written).
  void send_ipv4(wire::Ipv4Addr dst, size_t ip_len, const TxOffload& off) {
    send_ipv4(tx_.data(), false, dst, ip_len, off);
  }
  // The same for a frame built at `frame`: in tx_, or in place in the device (Device::tx_reserve),
  // when `in_place` says so (then it is committed there, or copied out if it must wait for ARP).
  // `p1` and `p2` (a super-frame's payload, for a device with tx_gather) follow the frame's first
  // kL2 + ip_len - p1.size() - p2.size() bytes without having been copied there.
  void send_ipv4(uint8_t* frame, bool in_place, wire::Ipv4Addr dst, size_t ip_len, const TxOffload& off,
                 wire::Bytes p1 = {}, wire::Bytes p2 = {});
  // Sends the UDP datagram of `l4_len` bytes at tx_[kL3...] (checksum complete) as fragments.
  void send_fragments(wire::Ipv4Emit h, size_t l4_len);
  wire::Ipv4Emit udp_ipv4_header(wire::Ipv4Addr dst);
  void send_arp(wire::ArpOp op, const wire::MacAddr& dst_mac, wire::Ipv4Addr target_ip,
                const wire::MacAddr& target_mac);
  void transmit(wire::Bytes frame, const TxOffload& off);
  uint16_t next_ident() { return ident_++; }

  Device& dev_;
  const Clock& clock_;
  IfaceConfig cfg_;
  IfaceStats stats_;
  ArpCache arp_;
  wire::Ipv4Reassembler reasm_;
  std::vector<uint8_t> rx_;
  // With scatter receive: the connection that took the last in-order data, and the length of that
  // segment's headers (Ethernet, IP, TCP): the guess for where the next frame's payload goes.
  struct HotFlow {
    bool valid = false;
    tcp::FourTuple t;
    size_t hdr = 0;
  };
  HotFlow hot_;
  std::vector<uint8_t> tx_;
  std::array<Parked, 16> parked_;
  uint16_t ident_ = 1;
  EchoReplyFn echo_fn_;
  std::unordered_map<uint16_t, UdpReceiver*> udp_;
  uint16_t udp_next_port_ = 49152;
  // ICMP errors: a token bucket, one token a millisecond up to 50 (Linux's icmp_msgs_per_sec
  // and icmp_msgs_burst), so a UDP scan cannot turn us into a reflector.
  int64_t icmp_tokens_ = 50;
  int64_t icmp_refill_ns_ = 0;
  tcp::TcpLayer tcp_;
};

}  // namespace weft::stack
