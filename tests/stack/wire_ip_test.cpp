// IPv4 header checks, ARP, ICMP and UDP edge cases.
#include <gtest/gtest.h>

#include <vector>

#include "stack/wire/arp.hpp"
#include "stack/wire/icmp.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/udp.hpp"

using namespace weft::stack::wire;

namespace {
const Ipv4Addr kA = Ipv4Addr::of(10, 1, 0, 1);
const Ipv4Addr kB = Ipv4Addr::of(10, 1, 0, 2);

std::vector<uint8_t> ip_packet(size_t payload, const Ipv4Emit& e) {
  std::vector<uint8_t> b(kIpv4Header + payload, 0x11);
  EXPECT_EQ(emit_ipv4(b, e, payload), kIpv4Header);
  return b;
}
Ipv4Emit emit_fields() {
  Ipv4Emit e;
  e.src = kA;
  e.dst = kB;
  e.protocol = ipproto::udp;
  e.ident = 9;
  return e;
}
void refresh_checksum(std::vector<uint8_t>& b) {
  // Recomputes the header checksum after a test changed a field, so the field check is what fails.
  const size_t hlen = size_t{b[0] & 0x0fu} * 4;
  b[10] = b[11] = 0;
  uint32_t s = 0;
  for (size_t i = 0; i < hlen; i += 2) s += (uint32_t{b[i]} << 8) | b[i + 1];
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  b[10] = static_cast<uint8_t>(~s >> 8);
  b[11] = static_cast<uint8_t>(~s);
}
}  // namespace

TEST(WireIpv4, RoundTripAndFieldChecks) {
  auto b = ip_packet(30, emit_fields());
  Ipv4Packet p;
  ASSERT_EQ(parse_ipv4(b, p), ParseError::ok);
  EXPECT_EQ(p.src, kA);
  EXPECT_EQ(p.dst, kB);
  EXPECT_EQ(p.ident, 9);
  EXPECT_TRUE(p.dont_fragment);
  EXPECT_FALSE(p.is_fragment());
  EXPECT_EQ(p.payload.size(), 30u);
  EXPECT_TRUE(p.options.empty());

  auto v6 = b;
  v6[0] = 0x65;
  refresh_checksum(v6);
  EXPECT_EQ(parse_ipv4(v6, p), ParseError::malformed);
  auto short_ihl = b;
  short_ihl[0] = 0x44;
  EXPECT_EQ(parse_ipv4(short_ihl, p, false), ParseError::malformed);
  auto evil = b;
  evil[6] |= 0x80;
  refresh_checksum(evil);
  EXPECT_EQ(parse_ipv4(evil, p), ParseError::malformed);
  auto small_total = b;
  small_total[2] = 0;
  small_total[3] = 19;
  refresh_checksum(small_total);
  EXPECT_EQ(parse_ipv4(small_total, p), ParseError::malformed);
  auto bad_sum = b;
  bad_sum[8] ^= 1;  // TTL
  EXPECT_EQ(parse_ipv4(bad_sum, p), ParseError::checksum);
  EXPECT_EQ(parse_ipv4(bad_sum, p, false), ParseError::ok);  // the device said it verified it
  EXPECT_EQ(parse_ipv4(Bytes(b).first(49), p), ParseError::truncated);
}

// Issue 26: options Linux's ip_options_compile() refuses broke nothing here. Each 8-byte option
// area below is dropped; those after them are kept.
TEST(WireIpv4, MalformedOptionsAreDroppedAsLinuxDoes) {
  auto with_options = [](std::vector<uint8_t> opts) {
    std::vector<uint8_t> b(20 + 8, 0);
    Ipv4Emit e = emit_fields();
    emit_ipv4(b, e, 8);
    opts.resize(8, 0);
    b.insert(b.begin() + 20, opts.begin(), opts.end());
    b[0] = 0x47;
    b[3] = 36;
    refresh_checksum(b);
    return b;
  };
  Ipv4Packet p;
  for (const std::vector<uint8_t>& bad : std::vector<std::vector<uint8_t>>{
           {1, 1, 30, 0},              // length 0
           {1, 30, 1},                 // length 1
           {30, 9, 0, 0},              // past the header (8 bytes of options)
           {1, 1, 1, 1, 1, 1, 1, 30},  // a kind without its length
           {7, 2, 0, 0},               // record route too short for its pointer
           {7, 7, 3, 0, 0, 0, 0},      // record route pointer below 4
           {68, 8, 4, 0, 0, 0, 0, 0},  // timestamp pointer below 5
           {131, 7, 4, 1, 2, 3, 4},    // loose source route: refused (accept_source_route 0)
           {137, 7, 4, 1, 2, 3, 4}})   // strict source route
    EXPECT_EQ(parse_ipv4(with_options(bad), p), ParseError::malformed) << int(bad[0]) << "," << int(bad[1]);
  for (const std::vector<uint8_t>& good :
       std::vector<std::vector<uint8_t>>{{},                         // EOL: the rest is padding
                                         {1, 1, 1, 1, 1, 1, 1, 1},   // NOPs
                                         {7, 7, 4, 0, 0, 0, 0},      // record route with room for one address
                                         {68, 8, 5, 0, 0, 0, 0, 0},  // timestamp
                                         {148, 4, 0, 0, 0},          // router alert
                                         {30, 8, 0, 0, 0, 0, 0, 0}})  // unknown: skipped by its length
    EXPECT_EQ(parse_ipv4(with_options(good), p), ParseError::ok) << int(good[0]);
}

TEST(WireIpv4, OptionsAndFragmentFields) {
  // A header with 4 bytes of options (NOP NOP NOP EOL).
  std::vector<uint8_t> b(24 + 16, 0);
  Ipv4Emit e = emit_fields();
  e.dont_fragment = false;
  e.more_fragments = true;
  e.frag_offset = 1480;
  emit_ipv4(b, e, 20);
  b.insert(b.begin() + 20, {1, 1, 1, 0});
  b.resize(40);
  b[0] = 0x46;
  b[3] = 40;
  refresh_checksum(b);
  Ipv4Packet p;
  ASSERT_EQ(parse_ipv4(b, p), ParseError::ok);
  EXPECT_EQ(p.options.size(), 4u);
  EXPECT_EQ(p.payload.size(), 16u);
  EXPECT_TRUE(p.more_fragments);
  EXPECT_EQ(p.frag_offset, 1480);
  // A non-final fragment whose length is not a multiple of 8.
  b[3] = 39;
  refresh_checksum(b);
  EXPECT_EQ(parse_ipv4(b, p), ParseError::malformed);
  // A fragment reaching past 65535 bytes (offset 65528 + 16).
  b[3] = 40;
  b[6] = 0x3f;
  b[7] = 0xff;
  refresh_checksum(b);
  EXPECT_EQ(parse_ipv4(b, p), ParseError::malformed);
}

TEST(WireIpv4, EmitRefusesWhatCannotBeSent) {
  std::vector<uint8_t> b(20);
  Ipv4Emit e = emit_fields();
  EXPECT_EQ(emit_ipv4(std::span<uint8_t>(b).first(19), e, 0), 0u);
  EXPECT_EQ(emit_ipv4(b, e, 65516), 0u);
  e.frag_offset = 12;
  EXPECT_EQ(emit_ipv4(b, e, 0), 0u);
}

TEST(WireArp, RoundTripAndUnsupported) {
  const ArpPacket a{ArpOp::reply, MacAddr{{2, 1, 1, 1, 1, 1}}, kA, MacAddr{{2, 2, 2, 2, 2, 2}}, kB};
  std::vector<uint8_t> b(kArpSize + 18, 0);  // with Ethernet padding
  ASSERT_EQ(emit_arp(b, a), kArpSize);
  ArpPacket q;
  ASSERT_EQ(parse_arp(b, q), ParseError::ok);
  EXPECT_EQ(q, a);
  EXPECT_EQ(parse_arp(Bytes(b).first(27), q), ParseError::truncated);
  auto ipv6 = b;
  ipv6[2] = 0x86;
  ipv6[3] = 0xdd;
  EXPECT_EQ(parse_arp(ipv6, q), ParseError::unsupported);
  auto rarp = b;
  rarp[7] = 3;
  EXPECT_EQ(parse_arp(rarp, q), ParseError::unsupported);
}

TEST(WireIcmp, ChecksumCoversThePayload) {
  std::vector<uint8_t> b(8 + 56);
  for (size_t i = 8; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i);
  ASSERT_EQ(emit_icmp(b, icmptype::echo_request, 0, 0xbeef, 1, 56), 8u);
  IcmpMessage m;
  ASSERT_EQ(parse_icmp(b, m), ParseError::ok);
  EXPECT_EQ(m.ident, 0xbeef);
  EXPECT_EQ(m.payload.size(), 56u);
  b[40] ^= 0x10;
  EXPECT_EQ(parse_icmp(b, m), ParseError::checksum);
  EXPECT_EQ(parse_icmp(Bytes(b).first(7), m), ParseError::truncated);
  EXPECT_EQ(emit_icmp(b, 0, 0, 0, 0, 57), 0u);
}

TEST(WireUdp, LengthAndChecksumRules) {
  std::vector<uint8_t> b(8 + 4, 0);
  ASSERT_EQ(emit_udp(b, 7, 9, kA, kB, 4), 8u);
  UdpDatagram d;
  ASSERT_EQ(parse_udp(b, kA, kB, d), ParseError::ok);
  EXPECT_EQ(d.payload.size(), 4u);
  EXPECT_EQ(parse_udp(b, kB, kB, d), ParseError::checksum);  // pseudo-header covered
  // A computed checksum of zero goes out as 0xffff (payload chosen to make it zero).
  std::vector<uint8_t> z(8 + 2, 0);
  emit_udp(z, 7, 9, kA, kB, 2, Csum::none);
  uint32_t s = (kA.v >> 16) + (kA.v & 0xffff) + (kB.v >> 16) + (kB.v & 0xffff) + 17 + 10 + 7 + 9 + 10;
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  const uint16_t fill = static_cast<uint16_t>(0xffff - s);
  z[8] = static_cast<uint8_t>(fill >> 8);
  z[9] = static_cast<uint8_t>(fill);
  emit_udp(z, 7, 9, kA, kB, 2);
  EXPECT_EQ(z[6], 0xff);
  EXPECT_EQ(z[7], 0xff);
  EXPECT_EQ(parse_udp(z, kA, kB, d), ParseError::ok);
  // Checksum 0 means none; trailing bytes past the length are cut off; a length below 8 or past
  // the buffer is refused.
  emit_udp(b, 7, 9, kA, kB, 4, Csum::none);
  b.push_back(0xaa);
  ASSERT_EQ(parse_udp(b, kB, kB, d), ParseError::ok);
  EXPECT_EQ(d.payload.size(), 4u);
  b[5] = 7;
  EXPECT_EQ(parse_udp(b, kA, kB, d), ParseError::malformed);
  b[5] = 14;
  EXPECT_EQ(parse_udp(b, kA, kB, d), ParseError::truncated);
}

// The datagram an ICMP error quotes: addresses, ports and the TCP sequence number, past options;
// too short, not IPv4 or a later fragment (no transport header) is refused.
TEST(WireIcmp, ErrorQuoteAndKinds) {
  std::vector<uint8_t> q(24 + 8, 0);
  Ipv4Emit h;
  h.protocol = 6;
  h.src = Ipv4Addr::of(10, 0, 0, 1);
  h.dst = Ipv4Addr::of(10, 0, 0, 2);
  ASSERT_EQ(emit_ipv4(q, h, 1000), 20u);
  q[0] = 0x46;  // one 4-byte option word
  const uint8_t l4[8] = {0x9c, 0x40, 0x00, 0x50, 0xde, 0xad, 0xbe, 0xef};
  std::copy(l4, l4 + 8, q.begin() + 24);
  IcmpQuote out;
  ASSERT_EQ(parse_icmp_quote(q, out), ParseError::ok);
  EXPECT_EQ(out.src, h.src);
  EXPECT_EQ(out.dst, h.dst);
  EXPECT_EQ(out.protocol, 6);
  EXPECT_EQ(out.total_len, 1020);
  EXPECT_EQ(out.src_port, 40000);
  EXPECT_EQ(out.dst_port, 80);
  EXPECT_EQ(out.tcp_seq, 0xdeadbeefu);
  EXPECT_EQ(parse_icmp_quote(std::span(q).first(31), out), ParseError::truncated);
  q[6] = 0;
  q[7] = 1;  // offset 8: not the first fragment
  EXPECT_EQ(parse_icmp_quote(q, out), ParseError::unsupported);
  q[0] = 0x65;
  EXPECT_EQ(parse_icmp_quote(q, out), ParseError::malformed);
  EXPECT_EQ(icmp_error_kind(3, 3), IcmpErrorKind::port_unreachable);
  EXPECT_EQ(icmp_error_kind(3, 4), IcmpErrorKind::frag_needed);
  EXPECT_EQ(icmp_error_kind(3, 13), IcmpErrorKind::host_unreachable);
  EXPECT_EQ(icmp_error_kind(11, 0), IcmpErrorKind::time_exceeded);
  EXPECT_EQ(icmp_error_kind(8, 0), IcmpErrorKind::none);
}
