#include "stack/wire/frame.hpp"

#include <cstring>

namespace weft::stack::wire {

namespace {
constexpr size_t kL3 = kEthernetHeader + kIpv4Header;

// Ethernet + IPv4 in front of a transport message of `l4_len` bytes already at out[kL3...].
size_t finish_l2l3(MutBytes out, const L2L3& l, uint8_t protocol, size_t l4_len) {
  Ipv4Emit ip = l.ip;
  ip.protocol = protocol;
  emit_ethernet(out, l.dst_mac, l.src_mac, ethertype::ipv4);
  if (emit_ipv4(out.subspan(kEthernetHeader), ip, l4_len) == 0) return 0;
  return kL3 + l4_len;
}

bool copy_payload(MutBytes out, size_t at, Bytes payload) {
  if (out.size() < at || out.size() - at < payload.size()) return false;
  if (!payload.empty()) std::memcpy(out.data() + at, payload.data(), payload.size());
  return true;
}
}  // namespace

size_t build_tcp_frame(MutBytes out, const L2L3& l, const TcpHeader& h, Bytes payload, Csum csum) {
  const size_t hlen = tcp_header_len(h);
  if (!copy_payload(out, kL3 + hlen, payload)) return 0;
  if (emit_tcp(out.subspan(kL3), h, l.ip.src, l.ip.dst, payload.size(), csum) == 0) return 0;
  return finish_l2l3(out, l, ipproto::tcp, hlen + payload.size());
}

size_t build_udp_frame(MutBytes out, const L2L3& l, uint16_t src_port, uint16_t dst_port, Bytes payload,
                       Csum csum) {
  if (!copy_payload(out, kL3 + kUdpHeader, payload)) return 0;
  if (emit_udp(out.subspan(kL3), src_port, dst_port, l.ip.src, l.ip.dst, payload.size(), csum) == 0) return 0;
  return finish_l2l3(out, l, ipproto::udp, kUdpHeader + payload.size());
}

size_t build_icmp_frame(MutBytes out, const L2L3& l, uint8_t type, uint8_t code, uint16_t ident, uint16_t seq,
                        Bytes payload) {
  if (!copy_payload(out, kL3 + kIcmpHeader, payload)) return 0;
  if (emit_icmp(out.subspan(kL3), type, code, ident, seq, payload.size()) == 0) return 0;
  return finish_l2l3(out, l, ipproto::icmp, kIcmpHeader + payload.size());
}

size_t build_arp_frame(MutBytes out, const MacAddr& dst, const ArpPacket& a) {
  if (out.size() < kEthernetHeader + kArpSize) return 0;
  emit_ethernet(out, dst, a.sender_mac, ethertype::arp);
  emit_arp(out.subspan(kEthernetHeader), a);
  return kEthernetHeader + kArpSize;
}

ParseError parse_frame(Bytes frame, ParsedFrame& out, bool verify) {
  out.kind = FrameKind::other;
  if (const ParseError e = parse_ethernet(frame, out.eth); e != ParseError::ok) return e;
  if (out.eth.ethertype == ethertype::arp) {
    out.kind = FrameKind::arp;
    return parse_arp(out.eth.payload, out.arp);
  }
  if (out.eth.ethertype != ethertype::ipv4) return ParseError::ok;
  out.kind = FrameKind::ipv4_other;
  if (const ParseError e = parse_ipv4(out.eth.payload, out.ip, verify); e != ParseError::ok) return e;
  if (out.ip.is_fragment()) {
    out.kind = FrameKind::ipv4_fragment;
    return ParseError::ok;
  }
  switch (out.ip.protocol) {
    case ipproto::icmp:
      out.kind = FrameKind::icmp;
      return parse_icmp(out.ip.payload, out.icmp, verify);
    case ipproto::udp:
      out.kind = FrameKind::udp;
      return parse_udp(out.ip.payload, out.ip.src, out.ip.dst, out.udp, verify);
    case ipproto::tcp:
      out.kind = FrameKind::tcp;
      return parse_tcp(out.ip.payload, out.ip.src, out.ip.dst, out.tcp, verify);
    default:
      return ParseError::ok;
  }
}

}  // namespace weft::stack::wire
