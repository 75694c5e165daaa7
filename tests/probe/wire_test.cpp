// Wire format: round trips, exact byte layout, and every class of malformed packet rejected.
#include "probe/wire.hpp"

#include <gtest/gtest.h>

#include <array>
#include <vector>

using namespace weft::probe::wire;

namespace {

Packet sample(Type t) {
  Packet p;
  p.type = t;
  p.session = 0x0102030405060708ULL;
  p.seq = 42;
  p.prober_tx_ns = 1'700'000'000'000'000'000;
  if (t != Type::probe) {
    p.responder_rx_ns = 1'700'000'000'000'100'000;
    p.responder_tx_ns = 1'700'000'000'000'120'000;
    p.flags = t == Type::reply ? (kRxKernel | kFollowupComing) : (kRxKernel | kTxKernel);
  }
  return p;
}

std::array<uint8_t, kSize> bytes_of(const Packet& p) {
  std::array<uint8_t, kSize> b{};
  encode(p, b);
  return b;
}

ParseError parse(const std::array<uint8_t, kSize>& b) {
  Packet out;
  return decode(b, out);
}

}  // namespace

TEST(Wire, RoundTripsEveryType) {
  for (Type t : {Type::probe, Type::reply, Type::followup}) {
    const Packet p = sample(t);
    auto b = bytes_of(p);
    Packet q;
    ASSERT_EQ(decode(b, q), ParseError::ok) << static_cast<int>(t);
    EXPECT_EQ(q.type, p.type);
    EXPECT_EQ(q.flags, p.flags);
    EXPECT_EQ(q.session, p.session);
    EXPECT_EQ(q.seq, p.seq);
    EXPECT_EQ(q.prober_tx_ns, p.prober_tx_ns);
    EXPECT_EQ(q.responder_rx_ns, p.responder_rx_ns);
    EXPECT_EQ(q.responder_tx_ns, p.responder_tx_ns);
  }
}

TEST(Wire, LayoutIsBigEndianAndFixed) {
  auto b = bytes_of(sample(Type::probe));
  EXPECT_EQ(b[0], 'W');
  EXPECT_EQ(b[1], 'F');
  EXPECT_EQ(b[2], 'P');
  EXPECT_EQ(b[3], 'B');
  EXPECT_EQ(b[4], kVersion);
  EXPECT_EQ(b[5], 1);
  EXPECT_EQ(b[6], 0);
  EXPECT_EQ(b[7], 0);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(b[8 + i], i + 1);  // session 0x0102..08, most significant first
  EXPECT_EQ(b[23], 42);
  EXPECT_EQ(b[16], 0);
}

TEST(Wire, RejectsWrongSizes) {
  auto b = bytes_of(sample(Type::probe));
  Packet out;
  std::vector<uint8_t> v(b.begin(), b.end());
  EXPECT_EQ(decode(std::span<const uint8_t>(v.data(), 0), out), ParseError::size);
  EXPECT_EQ(decode(std::span<const uint8_t>(v.data(), kSize - 1), out), ParseError::size);
  v.push_back(0);
  EXPECT_EQ(decode(v, out), ParseError::size);
}

TEST(Wire, RejectsEveryMalformedClass) {
  auto probe = bytes_of(sample(Type::probe));
  auto reply = bytes_of(sample(Type::reply));
  auto followup = bytes_of(sample(Type::followup));
  auto with = [](std::array<uint8_t, kSize> b, size_t i, uint8_t v) {
    b[i] = v;
    return b;
  };
  EXPECT_EQ(parse(with(probe, 0, 'X')), ParseError::magic);
  EXPECT_EQ(parse(with(probe, 3, 'X')), ParseError::magic);
  EXPECT_EQ(parse(with(probe, 4, 0)), ParseError::version);
  EXPECT_EQ(parse(with(probe, 4, 2)), ParseError::version);
  EXPECT_EQ(parse(with(probe, 5, 0)), ParseError::type);
  EXPECT_EQ(parse(with(probe, 5, 4)), ParseError::type);
  EXPECT_EQ(parse(with(probe, 5, 0xff)), ParseError::type);
  EXPECT_EQ(parse(with(probe, 7, 1)), ParseError::reserved);
  EXPECT_EQ(parse(with(reply, 6, 0x20)), ParseError::flags);          // unknown bit
  EXPECT_EQ(parse(with(probe, 6, kRxKernel)), ParseError::flags);     // a probe has none
  EXPECT_EQ(parse(with(reply, 6, kTxKernel)), ParseError::flags);     // reply tx is user time
  EXPECT_EQ(parse(with(followup, 6, kRxKernel)), ParseError::flags);  // follow-up without tx
  EXPECT_EQ(parse(with(followup, 6, kTxKernel | kFollowupComing)), ParseError::flags);
  auto zero = [](std::array<uint8_t, kSize> b, size_t off) {
    for (size_t i = 0; i < 8; ++i) b[off + i] = 0;
    return b;
  };
  EXPECT_EQ(parse(zero(probe, 8)), ParseError::session);
  EXPECT_EQ(parse(zero(probe, 16)), ParseError::seq);
  EXPECT_EQ(parse(zero(probe, 24)), ParseError::times);        // no prober send time
  EXPECT_EQ(parse(with(probe, 24, 0x80)), ParseError::times);  // negative send time
  EXPECT_EQ(parse(with(probe, 39, 1)), ParseError::times);     // a probe carries no responder times
  EXPECT_EQ(parse(zero(reply, 32)), ParseError::times);
  EXPECT_EQ(parse(zero(reply, 40)), ParseError::times);
  EXPECT_EQ(parse(with(reply, 32, 0x80)), ParseError::times);
  EXPECT_EQ(parse(zero(followup, 40)), ParseError::times);
  for (auto e : {ParseError::ok, ParseError::size, ParseError::magic, ParseError::times})
    EXPECT_STRNE(to_string(e), "unknown");
}

TEST(Wire, DecodeLeavesOutputUntouchedOnError) {
  Packet out;
  out.seq = 777;
  auto b = bytes_of(sample(Type::probe));
  b[0] = 0;
  EXPECT_NE(decode(b, out), ParseError::ok);
  EXPECT_EQ(out.seq, 777u);
}
