// Whole frames: a SYN built by an independent script (Python, 16-bit word checksums) in the
// Linux kernel's option layout parses field by field, and the builders reproduce it byte for byte.
#include <gtest/gtest.h>

#include <vector>

#include "stack/wire/frame.hpp"

using namespace weft::stack::wire;

namespace {
// 02:00:00:00:00:01 10.0.0.1:40000 -> 02:00:00:00:00:02 10.0.0.2:5201, IP id 0x1234 DF ttl 64,
// SYN seq 0x11223344 win 64240, options MSS 1460, SACK-permitted, TS 1000/0, NOP, WS 7.
const std::vector<uint8_t> kSyn{0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08,
                                0x00, 0x45, 0x00, 0x00, 0x3c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x14, 0x86,
                                0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0x9c, 0x40, 0x14, 0x51, 0x11,
                                0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02, 0xfa, 0xf0, 0x40, 0x2d,
                                0x00, 0x00, 0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0x00, 0x00, 0x03,
                                0xe8, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x07};

const MacAddr kMac1{{2, 0, 0, 0, 0, 1}};
const MacAddr kMac2{{2, 0, 0, 0, 0, 2}};
const Ipv4Addr kIp1 = Ipv4Addr::of(10, 0, 0, 1);
const Ipv4Addr kIp2 = Ipv4Addr::of(10, 0, 0, 2);

L2L3 l2l3() {
  L2L3 l;
  l.src_mac = kMac1;
  l.dst_mac = kMac2;
  l.ip.src = kIp1;
  l.ip.dst = kIp2;
  l.ip.ident = 0x1234;
  return l;
}

TcpHeader syn_header() {
  TcpHeader h;
  h.src_port = 40000;
  h.dst_port = 5201;
  h.seq = 0x11223344;
  h.flags = tcpflag::syn;
  h.window = 64240;
  h.options.has_mss = true;
  h.options.mss = 1460;
  h.options.sack_permitted = true;
  h.options.has_timestamps = true;
  h.options.ts_val = 1000;
  h.options.has_wscale = true;
  h.options.wscale = 7;
  return h;
}
}  // namespace

TEST(WireFrame, ParsesAReferenceSyn) {
  ParsedFrame f;
  ASSERT_EQ(parse_frame(kSyn, f), ParseError::ok);
  ASSERT_EQ(f.kind, FrameKind::tcp);
  EXPECT_EQ(f.eth.src, kMac1);
  EXPECT_EQ(f.eth.dst, kMac2);
  EXPECT_EQ(f.ip.src, kIp1);
  EXPECT_EQ(f.ip.dst, kIp2);
  EXPECT_EQ(f.ip.ident, 0x1234);
  EXPECT_TRUE(f.ip.dont_fragment);
  EXPECT_EQ(f.ip.ttl, 64);
  EXPECT_EQ(f.tcp.h, syn_header());
  EXPECT_EQ(f.tcp.header_len, 40u);
  EXPECT_TRUE(f.tcp.payload.empty());
  EXPECT_EQ(f.tcp.seg_len(), 1u);
}

TEST(WireFrame, BuildsTheReferenceSynByteForByte) {
  std::vector<uint8_t> out(1514);
  const size_t n = build_tcp_frame(out, l2l3(), syn_header(), {});
  out.resize(n);
  EXPECT_EQ(out, kSyn);
}

TEST(WireFrame, EveryFlippedBitIsCaughtByAChecksumOrAFieldCheck) {
  // Past the Ethernet header every bit is covered by the IP or TCP checksum, so a single flip
  // must never parse into a different segment that is accepted.
  for (size_t bit = kEthernetHeader * 8; bit < kSyn.size() * 8; ++bit) {
    auto b = kSyn;
    b[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    ParsedFrame f;
    EXPECT_NE(parse_frame(b, f), ParseError::ok) << "bit " << bit;
  }
}

TEST(WireFrame, TruncatedAtEveryLengthIsAnError) {
  for (size_t n = 0; n < kSyn.size(); ++n) {
    ParsedFrame f;
    const ParseError e = parse_frame(Bytes(kSyn).first(n), f);
    EXPECT_NE(e, ParseError::ok) << "length " << n;
  }
}

TEST(WireFrame, EthernetPaddingIsCutOffByTheIpLength) {
  std::vector<uint8_t> out(1514);
  TcpHeader h = syn_header();
  h.flags = tcpflag::ack;
  h.options = {};
  size_t n = build_tcp_frame(out, l2l3(), h, {});
  ASSERT_EQ(n, 54u);
  out.resize(60, 0xee);  // minimum Ethernet frame, padded
  ParsedFrame f;
  ASSERT_EQ(parse_frame(out, f), ParseError::ok);
  EXPECT_EQ(f.ip.payload.size(), 20u);
  EXPECT_TRUE(f.tcp.payload.empty());
}

TEST(WireFrame, UdpIcmpAndArpRoundTrip) {
  std::vector<uint8_t> out(1514);
  const std::vector<uint8_t> hello{'h', 'e', 'l', 'l', 'o'};
  size_t n = build_udp_frame(out, l2l3(), 53, 4000, hello);
  ParsedFrame f;
  ASSERT_EQ(parse_frame(Bytes(out).first(n), f), ParseError::ok);
  ASSERT_EQ(f.kind, FrameKind::udp);
  EXPECT_EQ(f.udp.src_port, 53);
  EXPECT_EQ(f.udp.dst_port, 4000);
  EXPECT_EQ(std::vector<uint8_t>(f.udp.payload.begin(), f.udp.payload.end()), hello);
  EXPECT_EQ(out[kEthernetHeader + kIpv4Header + 6], 0x98);  // checksum from the Python reference
  EXPECT_EQ(out[kEthernetHeader + kIpv4Header + 7], 0x2a);

  const std::vector<uint8_t> abc{'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'};
  n = build_icmp_frame(out, l2l3(), icmptype::echo_request, 0, 0x42, 7, abc);
  ASSERT_EQ(parse_frame(Bytes(out).first(n), f), ParseError::ok);
  ASSERT_EQ(f.kind, FrameKind::icmp);
  EXPECT_TRUE(f.icmp.is_echo());
  EXPECT_EQ(f.icmp.ident, 0x42);
  EXPECT_EQ(f.icmp.seq, 7);
  EXPECT_EQ(f.icmp.payload.size(), 8u);
  EXPECT_EQ(out[kEthernetHeader + kIpv4Header + 2], 0x66);  // checksum from the Python reference
  EXPECT_EQ(out[kEthernetHeader + kIpv4Header + 3], 0x21);

  ArpPacket a{ArpOp::request, kMac1, kIp1, MacAddr{}, kIp2};
  n = build_arp_frame(out, MacAddr::broadcast(), a);
  ASSERT_EQ(n, 42u);
  ASSERT_EQ(parse_frame(Bytes(out).first(n), f), ParseError::ok);
  ASSERT_EQ(f.kind, FrameKind::arp);
  EXPECT_EQ(f.arp, a);
  EXPECT_TRUE(f.eth.dst.is_broadcast());
  EXPECT_EQ(f.eth.src, kMac1);
}

TEST(WireFrame, BuildersRefuseBuffersThatAreTooSmall) {
  std::vector<uint8_t> out(60);
  const std::vector<uint8_t> big(100, 1);
  EXPECT_EQ(build_tcp_frame(out, l2l3(), syn_header(), big), 0u);
  EXPECT_EQ(build_udp_frame(out, l2l3(), 1, 2, big), 0u);
  EXPECT_EQ(build_icmp_frame(out, l2l3(), 8, 0, 1, 1, big), 0u);
  EXPECT_EQ(build_arp_frame(std::span<uint8_t>(out).first(41), MacAddr::broadcast(), ArpPacket{}), 0u);
}

TEST(WireFrame, UnknownTypesParseAsOther) {
  std::vector<uint8_t> out(1514);
  size_t n = build_udp_frame(out, l2l3(), 1, 2, {});
  out[12] = 0x86;  // IPv6 EtherType
  out[13] = 0xdd;
  ParsedFrame f;
  EXPECT_EQ(parse_frame(Bytes(out).first(n), f), ParseError::ok);
  EXPECT_EQ(f.kind, FrameKind::other);
  out[12] = 0x00;  // an 802.3 length
  out[13] = 0x40;
  EXPECT_EQ(parse_frame(Bytes(out).first(n), f), ParseError::unsupported);
}
