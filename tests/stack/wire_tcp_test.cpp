// TCP options and headers: every option kind, the 40-byte limit, malformed lists, unknown kinds,
// the partial checksum a device completes, and seg_len.
#include <gtest/gtest.h>

#include <vector>

#include "stack/wire/checksum.hpp"
#include "stack/wire/ipv4.hpp"
#include "stack/wire/tcp.hpp"

using namespace weft::stack::wire;

namespace {
const Ipv4Addr kA = Ipv4Addr::of(192, 168, 1, 1);
const Ipv4Addr kB = Ipv4Addr::of(192, 168, 1, 2);

TcpSegment round_trip(const TcpHeader& h, const std::vector<uint8_t>& payload, std::vector<uint8_t>& buf) {
  buf.assign(tcp_header_len(h) + payload.size(), 0);
  std::copy(payload.begin(), payload.end(), buf.begin() + static_cast<long>(tcp_header_len(h)));
  EXPECT_EQ(emit_tcp(buf, h, kA, kB, payload.size()), tcp_header_len(h));
  TcpSegment s;
  EXPECT_EQ(parse_tcp(buf, kA, kB, s), ParseError::ok);
  return s;
}
}  // namespace

TEST(WireTcp, DataSegmentWithTimestampsAndSackRoundTrips) {
  TcpHeader h;
  h.src_port = 1;
  h.dst_port = 2;
  h.seq = 0xfffffff0;
  h.ack = 77;
  h.flags = tcpflag::ack | tcpflag::psh;
  h.window = 501;
  h.options.has_timestamps = true;
  h.options.ts_val = 0xdeadbeef;
  h.options.ts_ecr = 12345;
  h.options.sack_count = 3;
  h.options.sack[0] = {100, 200};
  h.options.sack[1] = {300, 400};
  h.options.sack[2] = {0xfffffff0, 5};  // wraps
  EXPECT_EQ(tcp_header_len(h), 20u + 12 + 4 + 24);
  std::vector<uint8_t> buf;
  const std::vector<uint8_t> payload{1, 2, 3};
  const TcpSegment s = round_trip(h, payload, buf);
  EXPECT_EQ(s.h, h);
  EXPECT_EQ(s.payload.size(), 3u);
  EXPECT_EQ(s.seg_len(), 3u);
}

TEST(WireTcp, SackBlocksThatDoNotFitAreLeftOut) {
  TcpHeader h;
  h.options.has_timestamps = true;
  h.options.sack_count = 4;  // 12 + 4 + 32 = 48 > 40: only 3 fit
  for (uint32_t i = 0; i < 4; ++i) h.options.sack[i] = {i * 10, i * 10 + 5};
  EXPECT_EQ(tcp_header_len(h), 60u);
  std::vector<uint8_t> buf;
  const TcpSegment s = round_trip(h, {}, buf);
  EXPECT_EQ(s.h.options.sack_count, 3);
  EXPECT_EQ(s.h.options.sack[2], h.options.sack[2]);
  h.options.has_timestamps = false;  // without timestamps all 4 fit (4 + 32 = 36)
  EXPECT_EQ(tcp_header_len(h), 56u);
  EXPECT_EQ(round_trip(h, {}, buf).h.options.sack_count, 4);
}

TEST(WireTcp, SynOptionsWithoutTimestampsUseNopPadding) {
  TcpHeader h;
  h.flags = tcpflag::syn;
  h.options.has_mss = true;
  h.options.mss = 536;
  h.options.sack_permitted = true;
  h.options.has_wscale = true;
  h.options.wscale = 14;
  std::vector<uint8_t> buf;
  const TcpSegment s = round_trip(h, {}, buf);
  EXPECT_EQ(s.h, h);
  EXPECT_EQ(s.header_len, 32u);
  const std::vector<uint8_t> opts(buf.begin() + 20, buf.begin() + 32);
  EXPECT_EQ(opts, (std::vector<uint8_t>{2, 4, 2, 24, 1, 1, 4, 2, 1, 3, 3, 14}));
}

TEST(WireTcp, OptionParsing) {
  TcpOptions o;
  // Unknown kind 30 (MPTCP) of length 4 is skipped; EOL ends the list even with bytes after it.
  EXPECT_EQ(parse_tcp_options(std::vector<uint8_t>{30, 4, 9, 9, 2, 4, 1, 0, 0, 99, 99, 99}, o),
            ParseError::ok);
  EXPECT_TRUE(o.has_mss);
  EXPECT_EQ(o.mss, 256);
  EXPECT_EQ(parse_tcp_options(std::vector<uint8_t>{1, 1, 1, 1}, o), ParseError::ok);
  EXPECT_EQ(o, TcpOptions{});
  // Broken lists end the parse and keep what came before (Linux's tcp_parse_options): a length
  // below 2, past the end, a kind without a length byte. Known kinds with wrong lengths and SACK
  // with no blocks or a partial block are skipped by their length.
  for (const std::vector<uint8_t>& bad : std::vector<std::vector<uint8_t>>{{2, 4, 5, 0, 30, 1, 0, 0},
                                                                           {2, 4, 5, 0, 30, 6, 0, 0},
                                                                           {2, 4, 5, 0, 1, 1, 1, 30},
                                                                           {2, 4, 5, 0, 2, 0, 5, 0},
                                                                           {2, 3, 5, 2, 4, 5, 0, 0},
                                                                           {3, 4, 1, 0, 2, 4, 5, 0},
                                                                           {4, 3, 0, 2, 4, 5, 0, 0},
                                                                           {5, 2, 2, 4, 5, 0, 0, 0},
                                                                           {5, 6, 0, 0, 0, 0, 2, 4, 5, 0}}) {
    EXPECT_EQ(parse_tcp_options(bad, o), ParseError::ok) << int(bad[0]) << "," << int(bad[1]);
    EXPECT_TRUE(o.has_mss) << int(bad[0]) << "," << int(bad[1]);
    EXPECT_EQ(o.mss, 0x500) << int(bad[0]) << "," << int(bad[1]);
    EXPECT_FALSE(o.has_wscale || o.sack_permitted || o.has_timestamps || o.sack_count > 0);
  }
  // What follows a break is not read.
  EXPECT_EQ(parse_tcp_options(std::vector<uint8_t>{30, 0, 2, 4, 5, 0}, o), ParseError::ok);
  EXPECT_FALSE(o.has_mss);
}

TEST(WireTcp, HeaderChecks) {
  TcpHeader h;
  h.flags = tcpflag::ack;
  std::vector<uint8_t> buf;
  round_trip(h, {}, buf);
  TcpSegment s;
  EXPECT_EQ(parse_tcp(Bytes(buf).first(19), kA, kB, s), ParseError::truncated);
  auto bad = buf;
  bad[12] = 0x40;  // data offset 4 words
  EXPECT_EQ(parse_tcp(bad, kA, kB, s, false), ParseError::malformed);
  bad[12] = 0x60;  // 24 bytes of header in a 20-byte segment
  EXPECT_EQ(parse_tcp(bad, kA, kB, s, false), ParseError::truncated);
  // The pseudo-header is covered: the same bytes from another address fail.
  EXPECT_EQ(parse_tcp(buf, kA, Ipv4Addr::of(192, 168, 1, 3), s), ParseError::checksum);
  EXPECT_EQ(parse_tcp(buf, kA, Ipv4Addr::of(192, 168, 1, 3), s, false), ParseError::ok);
}

TEST(WireTcp, PartialChecksumCompletesToTheFullOne) {
  // What a device does with NEEDS_CSUM: sum from the TCP header on (the field holds the folded
  // pseudo-header sum) and store the complement.
  TcpHeader h;
  h.seq = 42;
  h.flags = tcpflag::ack;
  std::vector<uint8_t> payload(1001, 0x5a);
  std::vector<uint8_t> full(20 + payload.size()), partial(20 + payload.size());
  std::copy(payload.begin(), payload.end(), full.begin() + 20);
  std::copy(payload.begin(), payload.end(), partial.begin() + 20);
  emit_tcp(full, h, kA, kB, payload.size(), Csum::full);
  emit_tcp(partial, h, kA, kB, payload.size(), Csum::partial);
  const uint16_t c = csum_finish(csum_add(0, partial));
  EXPECT_EQ(c >> 8, full[16]);
  EXPECT_EQ(c & 0xff, full[17]);
}

TEST(WireTcp, SegLenCountsSynAndFin) {
  TcpSegment s;
  s.h.flags = tcpflag::syn | tcpflag::fin;
  EXPECT_EQ(s.seg_len(), 2u);
  std::vector<uint8_t> data(10);
  s.payload = data;
  s.h.flags = tcpflag::fin | tcpflag::ack;
  EXPECT_EQ(s.seg_len(), 11u);
}
