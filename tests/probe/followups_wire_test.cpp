// The follow-ups message (wire type 4): round trips at both ends of its size range, exact layout,
// and every malformed class rejected without touching the output.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "probe/wire.hpp"

using namespace weft::probe::wire;

namespace {

Followups sample(size_t n) {
  Followups f;
  f.flags = kRxKernel | kTxKernel;
  f.count = static_cast<uint8_t>(n);
  f.session = 0x1112131415161718ULL;
  for (size_t i = 0; i < n; ++i)
    f.entries[i] = {100 + i, 1'700'000'000'000'000'000 + static_cast<int64_t>(i),
                    1'700'000'000'000'050'000 + static_cast<int64_t>(i)};
  return f;
}

std::vector<uint8_t> bytes_of(const Followups& f) {
  uint8_t buf[kMaxFollowupsSize];
  const size_t n = encode_followups(f, buf);
  return std::vector<uint8_t>(buf, buf + n);
}

ParseError parse(const std::vector<uint8_t>& b) {
  Followups out;
  return decode_followups(b, out);
}

}  // namespace

TEST(FollowupsWire, RoundTripsOneAndMany) {
  for (size_t n : {size_t{1}, size_t{7}, kMaxFollowups}) {
    const Followups f = sample(n);
    const auto b = bytes_of(f);
    ASSERT_EQ(b.size(), kFollowupsHeader + n * kFollowupsEntry);
    EXPECT_TRUE(is_followups(b));
    Followups g;
    ASSERT_EQ(decode_followups(b, g), ParseError::ok) << n;
    EXPECT_EQ(g.flags, f.flags);
    EXPECT_EQ(g.count, n);
    EXPECT_EQ(g.session, f.session);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(g.entries[i].seq, f.entries[i].seq);
      EXPECT_EQ(g.entries[i].responder_rx_ns, f.entries[i].responder_rx_ns);
      EXPECT_EQ(g.entries[i].responder_tx_ns, f.entries[i].responder_tx_ns);
    }
  }
  EXPECT_EQ(kMaxFollowupsSize, 976u);
}

TEST(FollowupsWire, LayoutIsBigEndian) {
  const auto b = bytes_of(sample(2));
  EXPECT_EQ(b[0], 'W');
  EXPECT_EQ(b[3], 'B');
  EXPECT_EQ(b[4], kVersion);
  EXPECT_EQ(b[5], 4);
  EXPECT_EQ(b[6], kRxKernel | kTxKernel);
  EXPECT_EQ(b[7], 2);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(b[8 + i], 0x11 + i);
  EXPECT_EQ(b[16 + 7], 100);       // first entry's seq
  EXPECT_EQ(b[16 + 24 + 7], 101);  // second entry's seq
}

TEST(FollowupsWire, NeverMistakenForAFixedSizePacket) {
  auto b = bytes_of(sample(1));
  Packet p;
  EXPECT_NE(decode(b, p), ParseError::ok);  // 40 bytes: not a 48-byte packet
  std::vector<uint8_t> probe(kSize);
  Packet q;
  q.session = 1;
  q.seq = 1;
  q.prober_tx_ns = 1;
  encode(q, std::span<uint8_t, kSize>(probe.data(), kSize));
  EXPECT_FALSE(is_followups(probe));
  Followups f;
  EXPECT_EQ(decode_followups(probe, f), ParseError::type);
  EXPECT_FALSE(is_followups(std::vector<uint8_t>{0x57, 0x46, 0x50}));  // too short to say
}

TEST(FollowupsWire, RejectsEveryMalformedClass) {
  const auto good = bytes_of(sample(3));
  auto with = [&](size_t i, uint8_t v) {
    auto b = good;
    b[i] = v;
    return b;
  };
  auto sized = [&](size_t n) {  // the good message cut or padded with zeros to n bytes
    std::vector<uint8_t> b(n, 0);
    std::copy_n(good.begin(), std::min(n, good.size()), b.begin());
    return b;
  };
  EXPECT_EQ(parse(sized(0)), ParseError::size);
  EXPECT_EQ(parse(sized(kFollowupsHeader)), ParseError::size);               // no entry
  EXPECT_EQ(parse(sized(good.size() - 1)), ParseError::size);                // a cut entry
  EXPECT_EQ(parse(sized(good.size() + kFollowupsEntry)), ParseError::size);  // count says 3, 4 there
  EXPECT_EQ(parse(sized(kMaxFollowupsSize + kFollowupsEntry)), ParseError::size);
  EXPECT_EQ(parse(with(0, 'X')), ParseError::magic);
  EXPECT_EQ(parse(with(4, 2)), ParseError::version);
  EXPECT_EQ(parse(with(5, 3)), ParseError::type);
  EXPECT_EQ(parse(with(7, 0)), ParseError::size);                             // count 0
  EXPECT_EQ(parse(with(7, 41)), ParseError::size);                            // more than kMaxFollowups
  EXPECT_EQ(parse(with(6, kRxKernel)), ParseError::flags);                    // no transmit time
  EXPECT_EQ(parse(with(6, kTxKernel | kFollowupComing)), ParseError::flags);  // a reply's flag
  EXPECT_EQ(parse(with(6, kTxKernel | 0x40)), ParseError::flags);             // unknown bit
  auto zero = [&](size_t off) {
    auto b = good;
    for (size_t i = 0; i < 8; ++i) b[off + i] = 0;
    return b;
  };
  EXPECT_EQ(parse(zero(8)), ParseError::session);
  EXPECT_EQ(parse(zero(kFollowupsHeader + 2 * kFollowupsEntry)), ParseError::seq);  // the last entry
  EXPECT_EQ(parse(zero(kFollowupsHeader + 8)), ParseError::times);
  EXPECT_EQ(parse(with(kFollowupsHeader + kFollowupsEntry + 16, 0x80)), ParseError::times);  // negative
}

TEST(FollowupsWire, DecodeLeavesOutputUntouchedOnError) {
  Followups out;
  out.count = 9;
  out.entries[0].seq = 777;
  auto b = bytes_of(sample(3));
  for (size_t i = 0; i < 8; ++i) b[kFollowupsHeader + 2 * kFollowupsEntry + i] = 0;  // bad last entry
  EXPECT_EQ(decode_followups(b, out), ParseError::seq);
  EXPECT_EQ(out.count, 9);
  EXPECT_EQ(out.entries[0].seq, 777u);
}

TEST(FollowupsWire, EncodeRefusesWhatCannotBeSent) {
  std::vector<uint8_t> small(kFollowupsHeader + kFollowupsEntry);
  EXPECT_EQ(encode_followups(sample(2), small), 0u);  // does not fit
  EXPECT_EQ(encode_followups(sample(0), small), 0u);  // nothing to send
  Followups too_many = sample(1);
  too_many.count = kMaxFollowups + 1;
  std::vector<uint8_t> big(2048);
  EXPECT_EQ(encode_followups(too_many, big), 0u);
}
