#pragma once
// Whole frames: builders that stack Ethernet + IPv4 + TCP/UDP/ICMP (or Ethernet + ARP) into one
// buffer, scapy style, for the stack's own output and for tests that inject segments; and one
// parser that takes a frame apart down to the transport layer.
#include "stack/wire/arp.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack/wire/icmp.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/tcp.hpp"
#include "stack/wire/udp.hpp"

namespace weft::stack::wire {

struct L2L3 {
  MacAddr src_mac;
  MacAddr dst_mac;
  Ipv4Emit ip;  // protocol is set by the builder
};

// Each returns the frame length, or 0 if `out` is too small or the packet too large. The payload
// is copied in; `csum` applies to the transport checksum (the IPv4 header's is always computed).
size_t build_tcp_frame(MutBytes out, const L2L3& l, const TcpHeader& h, Bytes payload,
                       Csum csum = Csum::full);
size_t build_udp_frame(MutBytes out, const L2L3& l, uint16_t src_port, uint16_t dst_port, Bytes payload,
                       Csum csum = Csum::full);
size_t build_icmp_frame(MutBytes out, const L2L3& l, uint8_t type, uint8_t code, uint16_t ident, uint16_t seq,
                        Bytes payload);
// Ethernet source is a.sender_mac.
size_t build_arp_frame(MutBytes out, const MacAddr& dst, const ArpPacket& a);

enum class FrameKind : uint8_t { other, arp, ipv4_fragment, ipv4_other, icmp, udp, tcp };

struct ParsedFrame {
  FrameKind kind = FrameKind::other;
  EthernetFrame eth;
  ArpPacket arp;
  Ipv4Packet ip;
  IcmpMessage icmp;
  UdpDatagram udp;
  TcpSegment tcp;
};

// Parses as deep as it can: an error in any layer is returned (with `kind` the layer reached);
// an EtherType or IP protocol it does not know is `ok` with kind `other` / `ipv4_other`, and a
// fragment is `ok` with kind `ipv4_fragment` (reassemble it, then parse the transport).
ParseError parse_frame(Bytes frame, ParsedFrame& out, bool verify_checksums = true);

}  // namespace weft::stack::wire
