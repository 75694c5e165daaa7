#include "stack/interface.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <optional>
#include <span>

#include "base/big_endian.hpp"
#include "base/random.hpp"
#include "stack/wire/checksum.hpp"
#include "stack/wire/icmp.hpp"
#include "stack/wire/udp.hpp"

namespace weft::stack {

namespace {
constexpr size_t kL2 = wire::kEthernetHeader;
constexpr size_t kL3 = kL2 + wire::kIpv4Header;

uint64_t or_random(uint64_t v) { return v != 0 ? v : random_u64(); }

tcp::Config with_tso(tcp::Config c, const Device& dev, bool tso) {
  c.tso_max = tso ? static_cast<uint32_t>(dev.tso_max()) : 0;
  return c;
}
}  // namespace

Interface::Interface(Device& dev, const Clock& clock, const IfaceConfig& cfg)
    : dev_(dev),
      clock_(clock),
      cfg_(cfg),
      rx_(kL2 + wire::kIpv4MaxPacket + 64),
      tx_(kL2 + wire::kIpv4MaxPacket),
      tcp_(with_tso(cfg.tcp, dev, cfg.tso), clock, *this,
           or_random(cfg.secret0 | cfg.secret1 ? cfg.secret0 : 0),
           or_random(cfg.secret0 | cfg.secret1 ? cfg.secret1 : 0)) {
  for (auto& p : parked_) p.frame.resize(kL2 + dev.mtu());
}

bool Interface::is_ours(wire::Ipv4Addr dst) const {
  const uint32_t mask = cfg_.prefix_len == 0 ? 0 : ~uint32_t{0} << (32 - cfg_.prefix_len);
  return dst == cfg_.ip || dst.is_broadcast() || (cfg_.prefix_len < 31 && dst.v == (cfg_.ip.v | ~mask));
}

bool Interface::next_hop(wire::Ipv4Addr dst, wire::Ipv4Addr& hop) const {
  const uint32_t mask = cfg_.prefix_len == 0 ? 0 : ~uint32_t{0} << (32 - cfg_.prefix_len);
  if ((dst.v & mask) == (cfg_.ip.v & mask) || dst.is_broadcast()) {
    hop = dst;
    return true;
  }
  if (cfg_.gateway.is_unspecified()) return false;
  hop = cfg_.gateway;
  return true;
}

size_t Interface::poll_rx(size_t budget) {
  size_t n = 0;
  tcp_.begin_batch();  // one ACK per connection for the in-order data of the whole batch
  // Past the budget only for frames the device already holds (a batch read at once: at most one
  // batch), which no wait on its fd would announce.
  for (; n < budget || dev_.rx_pending(); ++n) {
    if (dev_.rx_scatter()) {
      const int k = receive_scattered();
      if (k > 0) continue;
      if (k < 0) ++stats_.rx_bad;
      break;
    }
    if (place_large_frame()) continue;
    // In place where the device can show it (AF_PACKET's ring slot: no copy out of the ring).
    auto r = dev_.receive_view(rx_);
    if (!r) {
      ++stats_.rx_bad;
      break;
    }
    if (r->frame.empty()) break;
    ++stats_.rx_frames;
    {
      const Clock::Hold now(clock_);  // one reading for the frame and all it sets off (Linux: tcp_mstamp)
      handle_frame(r->frame, r->csum_verified);
    }
    dev_.rx_release();
  }
  std::optional<Clock::Hold> now;  // the held ACKs go out on one reading (none when none wait)
  if (tcp_.holds_acks()) now.emplace(clock_);
  tcp_.end_batch();
  return n;
}

// A frame too large for the device's receive slots (on AF_PACKET, a local kernel sender's 64 KiB
// GSO super-frame) waits whole in the kernel while its headers can be read: when it is in-order
// TCP data, without IP options or fragments, that a connection can take in one piece, its payload
// is read straight into that connection's receive ring (Connection::rx_place). One copy, as the
// kernel's recv() into a user buffer, instead of two (into rx_, then into the ring: 18 % of
// weft's samples receiving a kernel sender's super-frames each, ad hoc). The frames waiting after
// it that continue the same connection's sequence go with it, up to kSplitRun, read by one system
// call (Device::receive_split_run: AF_PACKET's recvmmsg) into consecutive places of the ring, so
// a burst of super-frames costs one system call instead of one each. Everything else goes the
// usual way. True when it took a frame.
bool Interface::place_large_frame() {
  struct Large {
    tcp::FourTuple t;
    uint32_t seq = 0;
    size_t hdr = 0;  // Ethernet + IPv4 + TCP headers
    size_t payload = 0;
    uint8_t flags = 0;
  };
  // The headers of the i-th waiting large frame, when it is in-order-able TCP data: false if not.
  const auto peek = [&](size_t i, Large& f) {
    Device::RxPeek pk;
    // A checksum nobody verified must be summed over the whole frame first: the usual way.
    if (!dev_.rx_peek_large(pk, i) || !pk.csum_verified || pk.len > rx_.size()) return false;
    wire::EthernetFrame eth;
    if (wire::parse_ethernet(pk.head, eth) != wire::ParseError::ok || eth.dst != dev_.mac() ||
        eth.ethertype != wire::ethertype::ipv4)
      return false;
    const size_t l2 = static_cast<size_t>(eth.payload.data() - pk.head.data());
    wire::Ipv4Packet ip;
    if (wire::parse_ipv4_head(eth.payload, pk.len - l2, ip) != wire::ParseError::ok || !ip.options.empty() ||
        ip.is_fragment() || ip.protocol != wire::ipproto::tcp || ip.dst != cfg_.ip)
      return false;
    wire::TcpSegment seg;
    if (wire::parse_tcp(ip.payload, ip.src, ip.dst, seg, false) != wire::ParseError::ok) return false;
    using namespace wire::tcpflag;
    if ((seg.h.flags & (syn | fin | rst | urg)) != 0 || !(seg.h.flags & ack)) return false;
    f.t = {ip.dst, seg.h.dst_port, ip.src, seg.h.src_port};
    f.seq = seg.h.seq;
    f.hdr = l2 + wire::kIpv4Header + seg.header_len;
    f.payload = pk.len - f.hdr;
    f.flags = seg.h.flags;
    return f.hdr <= kSplitHeadRoom;
  };
  if (Device::RxPeek pk; !dev_.rx_peek_large(pk)) return false;  // the common case: not one
  std::array<Large, kSplitRun> run;
  size_t k = 0, total = 0;
  for (; k < run.size() && (k + 1) * kSplitHeadRoom <= rx_.size(); ++k) {
    if (!peek(k, run[k])) break;
    if (k > 0 && (!(run[k].t == run[0].t) || run[k].seq != run[0].seq + total)) break;
    total += run[k].payload;
  }
  wire::MutBytes place;
  for (; k > 0; total -= run[--k].payload)  // the longest head of the run its ring takes in one piece
    if (!(place = tcp_.rx_place(run[0].t, run[0].seq, total)).empty()) break;
  if (k == 0) return false;
  // The headers go to rx_, kSplitHeadRoom apart (the peeked slots are the kernel's again once read).
  std::array<Device::SplitDest, kSplitRun> d;
  for (size_t i = 0, off = 0; i < k; off += run[i++].payload)
    d[i] = {wire::MutBytes(rx_.data() + i * kSplitHeadRoom, run[i].hdr), place.subspan(off, run[i].payload)};
  const size_t got = dev_.receive_split_run(std::span(d.data(), k));
  for (size_t i = 0; i < got; ++i) {
    ++stats_.rx_frames;
    if (!d[i].ok) {
      ++stats_.rx_bad;  // lost; the frames after it are out of order now, and TCP takes them so
      continue;
    }
    const Large& f = run[i];
    const Clock::Hold now(clock_);
    const wire::Bytes head(d[i].head);
    wire::EthernetFrame eth;
    wire::Ipv4Packet ip;
    wire::TcpSegment seg;
    size_t l2 = 0;
    // Parsed again from the bytes read (the slot may be rewritten by now), then given the payload.
    if (wire::parse_ethernet(head, eth) != wire::ParseError::ok ||
        wire::parse_ipv4_head(eth.payload, f.hdr + f.payload - (l2 = eth.payload.data() - head.data()), ip) !=
            wire::ParseError::ok ||
        wire::parse_tcp(ip.payload, ip.src, ip.dst, seg, false) != wire::ParseError::ok ||
        l2 + wire::kIpv4Header + seg.header_len != f.hdr || seg.h.seq != f.seq || seg.h.flags != f.flags ||
        !(f.t == tcp::FourTuple{ip.dst, seg.h.dst_port, ip.src, seg.h.src_port})) {
      ++stats_.rx_bad;  // the kernel's queue and the ring disagree: cannot happen, but never trust it
      continue;
    }
    ++stats_.rx_placed;
    seg.payload = d[i].rest;
    tcp_.input(ip.src, ip.dst, seg);
  }
  return got > 0;
}

// A TAP shows nothing of a frame before it is read, so the place for its payload is a guess: the
// receive ring of the connection that took the last in-order data, at its next sequence number,
// after headers as long as that segment's. A bulk receiver's frames nearly all match; one that
// does not is moved back behind its headers in rx_ (the copy every frame took before) and goes
// the usual way, and it sets the next guess.
int Interface::receive_scattered() {
  wire::MutBytes place;
  size_t hdr = 0;
  uint32_t seq = 0;
  if (hot_.valid && hot_.hdr < rx_.size()) {
    place = tcp_.rx_place_next(hot_.t, rx_.size() - hot_.hdr, seq);
    if (!place.empty()) hdr = hot_.hdr;
  }
  auto r = dev_.receive_scatter(wire::MutBytes(rx_.data(), place.empty() ? rx_.size() : hdr), place);
  if (!r) return -1;
  if (r->len == 0) return 0;
  ++stats_.rx_frames;
  const Clock::Hold now(clock_);
  if (!place.empty() && r->len > hdr) {
    if (take_scattered(hdr, r->len, place, seq, r->csum_verified)) return 1;
    std::memmove(rx_.data() + hdr, place.data(), r->len - hdr);
  }
  handle_frame(wire::Bytes(rx_.data(), r->len), r->csum_verified);
  return 1;
}

bool Interface::take_scattered(size_t hdr, size_t len, wire::MutBytes place, uint32_t seq, bool csum_ok) {
  if (!csum_ok) return false;  // the checksum must be summed over the whole frame: the usual way
  wire::EthernetFrame eth;
  if (wire::parse_ethernet(wire::Bytes(rx_.data(), hdr), eth) != wire::ParseError::ok ||
      eth.dst != dev_.mac() || eth.ethertype != wire::ethertype::ipv4)
    return false;
  const size_t l2 = static_cast<size_t>(eth.payload.data() - rx_.data());
  wire::Ipv4Packet ip;
  if (wire::parse_ipv4_head(eth.payload, len - l2, ip) != wire::ParseError::ok || !ip.options.empty() ||
      ip.is_fragment() || ip.protocol != wire::ipproto::tcp || ip.dst != cfg_.ip)
    return false;
  wire::TcpSegment seg;
  if (wire::parse_tcp(ip.payload, ip.src, ip.dst, seg, false) != wire::ParseError::ok ||
      l2 + wire::kIpv4Header + seg.header_len != hdr)
    return false;
  using namespace wire::tcpflag;
  if ((seg.h.flags & (syn | fin | rst | urg)) != 0 || !(seg.h.flags & ack) || seg.h.seq != seq ||
      !(hot_.t == tcp::FourTuple{ip.dst, seg.h.dst_port, ip.src, seg.h.src_port}))
    return false;
  ++stats_.rx_placed;
  seg.payload = place.first(len - hdr);
  tcp_.input(ip.src, ip.dst, seg);
  return true;
}

void Interface::handle_frame(wire::Bytes frame, bool csum_ok) {
  wire::EthernetFrame eth;
  if (wire::parse_ethernet(frame, eth) != wire::ParseError::ok) {
    ++stats_.rx_bad;
    return;
  }
  if (!(eth.dst == dev_.mac() || eth.dst.is_broadcast())) {
    ++stats_.rx_not_ours;
    return;
  }
  if (eth.ethertype == wire::ethertype::arp) {
    wire::ArpPacket a;
    if (wire::parse_arp(eth.payload, a) != wire::ParseError::ok) {
      ++stats_.rx_bad;
      return;
    }
    handle_arp(a);
    return;
  }
  if (eth.ethertype != wire::ethertype::ipv4) {
    ++stats_.rx_not_ours;
    return;
  }
  wire::Ipv4Packet ip;
  if (wire::parse_ipv4(eth.payload, ip) != wire::ParseError::ok) {
    ++stats_.rx_bad;
    return;
  }
  if (!is_ours(ip.dst)) {
    ++stats_.rx_not_ours;  // no forwarding
    return;
  }
  if (ip.is_fragment()) {
    wire::Bytes whole;
    if (reasm_.feed(ip, clock_.now_ns(), whole) == wire::Ipv4Reassembler::Outcome::complete)
      handle_l4(ip, whole, false, {});  // a device cannot have verified a reassembled datagram
    return;
  }
  // The packet as received, up to its total length (Ethernet may have padded it).
  const wire::Bytes raw =
      eth.payload.first(static_cast<size_t>(ip.payload.data() + ip.payload.size() - eth.payload.data()));
  handle_l4(ip, ip.payload, csum_ok, raw);
}

void Interface::handle_arp(const wire::ArpPacket& a) {
  if (a.sender_ip.is_unspecified() || a.sender_mac.is_multicast()) return;
  const int64_t now = clock_.now_ns();
  // RFC 826: update an existing entry from any packet; add one only when we are the target.
  const bool for_us = a.target_ip == cfg_.ip;
  if (for_us || arp_.has(a.sender_ip)) arp_.insert(a.sender_ip, a.sender_mac, now);
  if (for_us && a.op == wire::ArpOp::request)
    send_arp(wire::ArpOp::reply, a.sender_mac, a.sender_ip, a.sender_mac);
  // Frames that waited for this address can go now.
  wire::MacAddr mac;
  if (arp_.lookup(a.sender_ip, now, mac) == ArpLookup::miss) return;
  for (auto& p : parked_) {
    if (!p.used || p.hop != a.sender_ip) continue;
    wire::emit_ethernet(p.frame, mac, dev_.mac(), wire::ethertype::ipv4);
    transmit(wire::Bytes(p.frame.data(), p.len), p.off);
    p.used = false;
  }
}

void Interface::handle_l4(const wire::Ipv4Packet& ip, wire::Bytes payload, bool csum_ok, wire::Bytes raw) {
  switch (ip.protocol) {
    case wire::ipproto::tcp: {
      wire::TcpSegment seg;
      if (wire::parse_tcp(payload, ip.src, ip.dst, seg, !csum_ok) != wire::ParseError::ok) {
        ++stats_.rx_bad;
        return;
      }
      if (ip.dst != cfg_.ip) return;                                        // no TCP to broadcast addresses
      if (dev_.rx_scatter() && !seg.payload.empty() && ip.options.empty())  // the next frame's guess
        hot_ = {
            true, {ip.dst, seg.h.dst_port, ip.src, seg.h.src_port}, kL2 + wire::kIpv4Header + seg.header_len};
      tcp_.input(ip.src, ip.dst, seg);
      return;
    }
    case wire::ipproto::icmp: {
      wire::IcmpMessage m;
      if (wire::parse_icmp(payload, m) != wire::ParseError::ok) {
        ++stats_.rx_bad;
        return;
      }
      if (m.type == wire::icmptype::echo_reply) {
        if (echo_fn_) echo_fn_(ip.src, m.ident, m.seq, m.payload.size());
        return;
      }
      if (m.type == wire::icmptype::dest_unreachable || m.type == wire::icmptype::time_exceeded) {
        ++stats_.icmp_errors_received;
        handle_icmp_error(ip, m);
        return;
      }
      if (m.type != wire::icmptype::echo_request || m.code != 0 || ip.dst != cfg_.ip) return;
      std::memmove(tx_.data() + kL3 + wire::kIcmpHeader, m.payload.data(), m.payload.size());
      wire::emit_icmp(wire::MutBytes(tx_).subspan(kL3), wire::icmptype::echo_reply, 0, m.ident, m.seq,
                      m.payload.size());
      wire::Ipv4Emit h;
      h.src = cfg_.ip;
      h.dst = ip.src;
      h.protocol = wire::ipproto::icmp;
      h.ident = next_ident();
      h.dont_fragment = false;
      const size_t l4 = wire::kIcmpHeader + m.payload.size();
      ++stats_.echo_replies;
      // A reply past the MTU (to a request that came in fragments) leaves in fragments, as Linux's
      // icmp_reply does (its ICMP socket never sets DF): with none, a large ping got no answer.
      if (wire::kIpv4Header + l4 > dev_.mtu()) {
        send_fragments(h, l4);
        return;
      }
      wire::emit_ipv4(wire::MutBytes(tx_).subspan(kL2), h, l4);
      send_ipv4(ip.src, wire::kIpv4Header + l4, {});
      return;
    }
    case wire::ipproto::udp:
      handle_udp(ip, payload, csum_ok, raw);
      return;
    default:
      ++stats_.rx_not_ours;
  }
}

// An error goes to the transport that sent the datagram it quotes: TCP checks the quoted sequence
// number (RFC 5927), UDP tells a socket connected to the quoted destination.
void Interface::handle_icmp_error(const wire::Ipv4Packet& ip, const wire::IcmpMessage& m) {
  wire::IcmpQuote q;
  const wire::IcmpErrorKind kind = wire::icmp_error_kind(m.type, m.code);
  if (ip.dst != cfg_.ip || kind == wire::IcmpErrorKind::none ||
      wire::parse_icmp_quote(m.payload, q) != wire::ParseError::ok || q.src != cfg_.ip) {
    ++stats_.icmp_errors_not_ours;
    return;
  }
  // RFC 1191: "fragmentation needed" carries the next hop's MTU in the low 16 bits.
  deliver_icmp_error(q, kind, kind == wire::IcmpErrorKind::frag_needed ? m.seq : 0);
}

void Interface::deliver_icmp_error(const wire::IcmpQuote& q, wire::IcmpErrorKind kind, uint16_t mtu) {
  if (q.protocol == wire::ipproto::tcp) {
    tcp_.icmp_error(q, kind, mtu);
  } else if (q.protocol == wire::ipproto::udp) {
    if (auto it = udp_.find(q.src_port); it != udp_.end())
      it->second->on_icmp_error(q.src_port, q.dst, q.dst_port, kind);
  } else {
    ++stats_.icmp_errors_not_ours;
  }
}

void Interface::handle_udp(const wire::Ipv4Packet& ip, wire::Bytes payload, bool csum_ok, wire::Bytes raw) {
  wire::UdpDatagram d;
  if (wire::parse_udp(payload, ip.src, ip.dst, d, !csum_ok) != wire::ParseError::ok) {
    ++stats_.rx_bad;
    return;
  }
  ++stats_.udp_received;
  if (auto it = udp_.find(d.dst_port); it != udp_.end()) {
    it->second->on_datagram(ip.src, d.src_port, d.dst_port, d.payload);
    return;
  }
  ++stats_.udp_no_port;
  // RFC 1122 4.1.3.1: port unreachable, but never for a datagram to a broadcast or multicast
  // address or from one that cannot be answered (3.2.2), nor for a reassembled one (no quote).
  if (ip.dst != cfg_.ip || ip.src.is_unspecified() || ip.src.is_broadcast() || ip.src.is_multicast() ||
      raw.empty())
    return;
  send_port_unreachable(ip, raw);
}

void Interface::send_port_unreachable(const wire::Ipv4Packet& ip, wire::Bytes raw) {
  const int64_t now = clock_.now_ns();
  if (icmp_refill_ns_ == 0) icmp_refill_ns_ = now;
  if (const int64_t add = (now - icmp_refill_ns_) / kMs; add > 0) {
    icmp_tokens_ = std::min<int64_t>(50, icmp_tokens_ + add);
    icmp_refill_ns_ += add * kMs;
  }
  if (icmp_tokens_ == 0) {
    ++stats_.icmp_rate_limited;
    return;
  }
  --icmp_tokens_;
  // RFC 792 quotes the IP header and 8 bytes; RFC 1812 4.3.2.3 allows up to 576 bytes in all.
  const size_t quote = std::min(raw.size(), size_t{576} - wire::kIpv4Header - wire::kIcmpHeader);
  std::memcpy(tx_.data() + kL3 + wire::kIcmpHeader, raw.data(), quote);
  wire::emit_icmp(wire::MutBytes(tx_).subspan(kL3), wire::icmptype::dest_unreachable, 3, 0, 0, quote);
  wire::Ipv4Emit h;
  h.src = cfg_.ip;
  h.dst = ip.src;
  h.protocol = wire::ipproto::icmp;
  h.ident = next_ident();
  h.dont_fragment = false;
  wire::emit_ipv4(wire::MutBytes(tx_).subspan(kL2), h, wire::kIcmpHeader + quote);
  ++stats_.icmp_unreach_sent;
  send_ipv4(ip.src, wire::kIpv4Header + wire::kIcmpHeader + quote, {});
}

Result<uint16_t> Interface::udp_bind(uint16_t port, UdpReceiver* r) {
  if (r == nullptr) return fail("udp_bind: no receiver");
  if (port == 0) {
    for (int tries = 0; tries < 16384 && port == 0; ++tries) {
      const uint16_t p = udp_next_port_;
      udp_next_port_ = udp_next_port_ == 65535 ? 49152 : static_cast<uint16_t>(udp_next_port_ + 1);
      if (!udp_.contains(p)) port = p;
    }
    if (port == 0) return fail("udp_bind: no free ephemeral port");
  }
  if (!udp_.emplace(port, r).second) return fail("udp_bind: port {} is bound already", port);
  return port;
}

void Interface::udp_unbind(uint16_t port) { udp_.erase(port); }

Status Interface::send_udp(uint16_t src_port, wire::Ipv4Addr dst, uint16_t dst_port, wire::Bytes payload) {
  if (payload.size() > udp_max_payload())
    return fail("udp: {} bytes exceed an IPv4 datagram", payload.size());
  wire::Ipv4Addr hop;
  if (!next_hop(dst, hop)) {
    ++stats_.no_route;
    return fail("udp: no route to {}", dst.v);
  }
  uint8_t* l4 = tx_.data() + kL3;
  if (!payload.empty()) std::memcpy(l4 + wire::kUdpHeader, payload.data(), payload.size());
  const bool fragment = payload.size() > udp_unfragmented_payload();
  // A device completes the checksum of one frame only: fragments carry the one computed here.
  const bool offload = dev_.tx_csum_offload() && !fragment;
  wire::emit_udp(wire::MutBytes(l4, wire::kUdpHeader + payload.size()), src_port, dst_port, cfg_.ip, dst,
                 payload.size(), offload ? wire::Csum::partial : wire::Csum::full);
  if (fragment) {
    ++stats_.udp_fragmented;
    send_fragments(udp_ipv4_header(dst), wire::kUdpHeader + payload.size());
    return {};
  }
  wire::emit_ipv4(wire::MutBytes(tx_).subspan(kL2), udp_ipv4_header(dst), wire::kUdpHeader + payload.size());
  TxOffload off;
  if (offload) off = {true, static_cast<uint16_t>(kL3), 6};
  send_ipv4(dst, wire::kIpv4Header + wire::kUdpHeader + payload.size(), off);
  return {};
}

// The IP header of a UDP datagram (or of all its fragments: one identification): without DF, so
// a router past a smaller MTU fragments it rather than dropping it.
wire::Ipv4Emit Interface::udp_ipv4_header(wire::Ipv4Addr dst) {
  wire::Ipv4Emit h;
  h.src = cfg_.ip;
  h.dst = dst;
  h.protocol = wire::ipproto::udp;
  h.ident = next_ident();
  h.dont_fragment = false;
  return h;
}

// RFC 791 fragmentation of the datagram whose payload (`l4_len` bytes) is at tx_[kL3...], with
// header `h`: pieces of the largest multiple of 8 bytes that fits the MTU, all with the datagram's
// identification, MF on all but the last. Each piece is moved down to tx_[kL3...] behind its own
// header and sent before the next (it overwrites only bytes already sent), so nothing is allocated.
void Interface::send_fragments(wire::Ipv4Emit h, size_t l4_len) {
  const size_t piece = (dev_.mtu() - wire::kIpv4Header) & ~size_t{7};
  const wire::Ipv4Addr dst = h.dst;
  for (size_t off = 0; off < l4_len; off += piece) {
    const size_t len = std::min(piece, l4_len - off);
    if (off > 0) std::memmove(tx_.data() + kL3, tx_.data() + kL3 + off, len);
    h.frag_offset = static_cast<uint16_t>(off);
    h.more_fragments = off + len < l4_len;
    wire::emit_ipv4(wire::MutBytes(tx_).subspan(kL2), h, len);
    ++stats_.fragments_sent;
    send_ipv4(dst, wire::kIpv4Header + len, {});
  }
}

Status Interface::ping(wire::Ipv4Addr dst, uint16_t ident, uint16_t seq, size_t payload_len) {
  if (kL3 + wire::kIcmpHeader + payload_len > kL2 + dev_.mtu())
    return fail("ping: {} bytes exceed the MTU", payload_len);
  for (size_t i = 0; i < payload_len; ++i) tx_[kL3 + wire::kIcmpHeader + i] = static_cast<uint8_t>(i);
  wire::emit_icmp(wire::MutBytes(tx_).subspan(kL3), wire::icmptype::echo_request, 0, ident, seq, payload_len);
  wire::Ipv4Emit h;
  h.src = cfg_.ip;
  h.dst = dst;
  h.protocol = wire::ipproto::icmp;
  h.ident = next_ident();
  wire::emit_ipv4(wire::MutBytes(tx_).subspan(kL2), h, wire::kIcmpHeader + payload_len);
  wire::Ipv4Addr hop;
  if (!next_hop(dst, hop)) return fail("ping: no route to {}", dst.v);
  send_ipv4(dst, wire::kIpv4Header + wire::kIcmpHeader + payload_len, {});
  return {};
}

void Interface::send_segment(const tcp::FourTuple& t, const wire::TcpHeader& h, wire::Bytes p1,
                             wire::Bytes p2) {
  const size_t hlen = wire::tcp_header_len(h);
  const size_t plen = p1.size() + p2.size();
  if (kL3 + hlen + plen > kL2 + dev_.mtu()) {
    ++stats_.tx_errors;  // TCP's MSS comes from the MTU, so this is a configuration error
    return;
  }
  const size_t ip_len = wire::kIpv4Header + hlen + plen;
  // Built where the device reads it when it can (the payload then goes from the send ring to the
  // wire in one copy), else in tx_.
  const wire::MutBytes place = dev_.tx_reserve(kL2 + ip_len);
  uint8_t* frame = place.empty() ? tx_.data() : place.data();
  uint8_t* l4 = frame + kL3;
  const bool offload = dev_.tx_csum_offload();
  uint64_t sum = 0;
  if (offload) {
    if (!p1.empty()) std::memcpy(l4 + hlen, p1.data(), p1.size());
    if (!p2.empty()) std::memcpy(l4 + hlen + p1.size(), p2.data(), p2.size());
  } else {
    // The payload's sum taken while copying it, not in a second pass (hlen is even, so p1 starts
    // on a word; p2 after an odd p1 starts mid-word: its sum is byte-swapped, RFC 1071 2 (B)).
    sum = wire::csum_copy(l4 + hlen, p1, 0);
    if (!p2.empty()) {
      uint16_t s2 = wire::csum_fold(wire::csum_copy(l4 + hlen + p1.size(), p2, 0));
      if (p1.size() % 2 != 0) s2 = __builtin_bswap16(s2);
      sum += s2;
    }
  }
  wire::emit_tcp(wire::MutBytes(l4, hlen + plen), h, t.local_ip, t.remote_ip, plen,
                 offload ? wire::Csum::partial : wire::Csum::none);
  if (!offload) {
    const uint64_t pseudo =
        wire::csum_pseudo(t.local_ip, t.remote_ip, wire::ipproto::tcp, static_cast<uint16_t>(hlen + plen));
    be::store<uint16_t>(l4 + 16, wire::csum_finish(wire::csum_add(pseudo + sum, wire::Bytes(l4, hlen))));
  }
  wire::Ipv4Emit ip;
  ip.src = t.local_ip;
  ip.dst = t.remote_ip;
  ip.protocol = wire::ipproto::tcp;
  ip.ident = next_ident();
  wire::emit_ipv4(wire::MutBytes(frame + kL2, ip_len), ip, hlen + plen);
  TxOffload off;
  if (offload) off = {true, static_cast<uint16_t>(kL3), 16};
  send_ipv4(frame, !place.empty(), t.remote_ip, ip_len, off);
}

void Interface::send_super_segment(const tcp::FourTuple& t, const wire::TcpHeader& h, wire::Bytes p1,
                                   wire::Bytes p2, uint32_t seg_size) {
  const size_t hlen = wire::tcp_header_len(h);
  const size_t plen = p1.size() + p2.size();
  if (dev_.tso_max() < plen || kL3 + hlen + plen > tx_.size()) {  // the device cannot: cut it here
    SegmentSink::send_super_segment(t, h, p1, p2, seg_size);
    return;
  }
  uint8_t* l4 = tx_.data() + kL3;
  // A device that gathers takes the payload from the send ring as it is (64 KiB not copied here).
  const bool gather = dev_.tx_gather();
  if (!gather) {
    if (!p1.empty()) std::memcpy(l4 + hlen, p1.data(), p1.size());
    if (!p2.empty()) std::memcpy(l4 + hlen + p1.size(), p2.data(), p2.size());
  }
  // The pseudo-header sum over the whole length: the kernel's GSO adjusts it for each segment.
  wire::emit_tcp(wire::MutBytes(l4, hlen + plen), h, t.local_ip, t.remote_ip, plen, wire::Csum::partial);
  wire::Ipv4Emit ip;
  ip.src = t.local_ip;
  ip.dst = t.remote_ip;
  ip.protocol = wire::ipproto::tcp;
  ip.ident = ident_;
  ident_ = static_cast<uint16_t>(ident_ + (plen + seg_size - 1) / seg_size);  // GSO numbers the segments
  wire::emit_ipv4(wire::MutBytes(tx_).subspan(kL2), ip, hlen + plen);
  TxOffload off{true, static_cast<uint16_t>(kL3), 16, static_cast<uint16_t>(seg_size),
                static_cast<uint16_t>(kL3 + hlen)};
  if (gather)
    send_ipv4(tx_.data(), false, t.remote_ip, wire::kIpv4Header + hlen + plen, off, p1, p2);
  else
    send_ipv4(t.remote_ip, wire::kIpv4Header + hlen + plen, off);
}

void Interface::send_ipv4(uint8_t* frame, bool in_place, wire::Ipv4Addr dst, size_t ip_len,
                          const TxOffload& off, wire::Bytes p1, wire::Bytes p2) {
  wire::Ipv4Addr hop;
  if (!next_hop(dst, hop)) {
    ++stats_.no_route;
    return;
  }
  const int64_t now = clock_.now_ns();
  wire::MacAddr mac = wire::MacAddr::broadcast();
  const ArpLookup known = hop.is_broadcast() ? ArpLookup::fresh : arp_.lookup(hop, now, mac);
  if (known == ArpLookup::miss) {
    // Park the frame until the reply comes; the oldest parked frame makes room if needed.
    Parked* slot = &parked_[0];
    for (auto& p : parked_) {
      if (!p.used) {
        slot = &p;
        break;
      }
      if (p.since < slot->since) slot = &p;
    }
    if (slot->used || kL2 + ip_len > slot->frame.size() || !p1.empty() || !p2.empty()) {
      ++stats_.parked_dropped;  // (a TSO super-frame does not fit a slot: TCP sends it again)
      if (kL2 + ip_len > slot->frame.size() || !p1.empty() || !p2.empty()) {
        if (arp_.may_request(hop, now))
          send_arp(wire::ArpOp::request, wire::MacAddr::broadcast(), hop, wire::MacAddr{});
        return;
      }
    }
    slot->used = true;
    slot->hop = hop;
    slot->since = now;
    slot->len = kL2 + ip_len;
    slot->off = off;
    std::memcpy(slot->frame.data(), frame, kL2 + ip_len);  // (a reservation not committed lapses)
    if (arp_.may_request(hop, now))
      send_arp(wire::ArpOp::request, wire::MacAddr::broadcast(), hop, wire::MacAddr{});
    return;
  }
  // Past its lifetime the entry still carries traffic while a unicast request to that MAC
  // confirms it (after the frame: an in-place frame lives in the device's buffer).
  const bool confirm = known == ArpLookup::stale && arp_.may_request(hop, now);
  wire::emit_ethernet(wire::MutBytes(frame, kL2 + ip_len), mac, dev_.mac(), wire::ethertype::ipv4);
  if (!p1.empty() || !p2.empty()) {
    const wire::Bytes head(frame, kL2 + ip_len - p1.size() - p2.size());
    if (dev_.transmit_gather(head, p1, p2, off))
      ++stats_.tx_frames;
    else
      ++stats_.tx_errors;
  } else if (!in_place) {
    transmit(wire::Bytes(frame, kL2 + ip_len), off);
  } else if (dev_.tx_commit(kL2 + ip_len, off)) {
    ++stats_.tx_frames;
  } else {
    ++stats_.tx_errors;
  }
  if (confirm) send_arp(wire::ArpOp::request, mac, hop, wire::MacAddr{});
}

void Interface::send_arp(wire::ArpOp op, const wire::MacAddr& dst_mac, wire::Ipv4Addr target_ip,
                         const wire::MacAddr& target_mac) {
  uint8_t buf[kL2 + wire::kArpSize];
  const wire::ArpPacket a{op, dev_.mac(), cfg_.ip, target_mac, target_ip};
  wire::build_arp_frame(buf, dst_mac, a);
  if (op == wire::ArpOp::request)
    ++stats_.arp_requests;
  else
    ++stats_.arp_replies;
  transmit(wire::Bytes(buf, sizeof buf), {});
}

void Interface::transmit(wire::Bytes frame, const TxOffload& off) {
  if (dev_.transmit(frame, off)) {
    ++stats_.tx_frames;
  } else {
    ++stats_.tx_errors;
  }
}

void Interface::poll_timers() {
  const Clock::Hold hold(clock_);  // one reading for the whole timer pass
  const int64_t now = clock_.now_ns();
  tcp_.poll();
  reasm_.expire(now);
  for (auto& p : parked_) {
    if (!p.used) continue;
    if (now - p.since > 3 * kSec) {
      // No answer: the host is not there. As Linux's arp_error_report, the sender hears "host
      // unreachable" (a connect fails with EHOSTUNREACH after these 3 s rather than after its
      // SYN retries, over two minutes; an established connection keeps it as a soft error).
      p.used = false;
      ++stats_.parked_dropped;
      wire::IcmpQuote q;
      if (wire::parse_icmp_quote(wire::Bytes(p.frame.data() + kL2, p.len - kL2), q) == wire::ParseError::ok &&
          q.src == cfg_.ip) {
        ++stats_.arp_unreachable;
        deliver_icmp_error(q, wire::IcmpErrorKind::host_unreachable, 0);
      }
    } else if (arp_.may_request(p.hop, now)) {
      send_arp(wire::ArpOp::request, wire::MacAddr::broadcast(), p.hop, wire::MacAddr{});
    }
  }
}

int64_t Interface::next_deadline() const {
  int64_t d = tcp_.next_deadline();
  for (const auto& p : parked_)
    if (p.used) d = std::min(d, clock_.now_ns() + 100 * kMs);
  return d;
}

}  // namespace weft::stack
