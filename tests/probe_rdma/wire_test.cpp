#include "probe/rdma/wire.hpp"

#include <gtest/gtest.h>

#include <array>
#include <random>

namespace w = weft::probe::rdma_wire;

namespace {

w::Message ping() {
  w::Message m;
  m.type = w::Type::ping;
  m.flags = w::kGlobal;
  m.session = 0x0102030405060708ull;
  m.seq = 42;
  for (size_t i = 0; i < 16; ++i) m.gid[i] = static_cast<uint8_t>(0xa0 + i);
  m.qkey = 0x11111111;
  return m;
}

std::array<uint8_t, w::kSize> bytes(const w::Message& m) {
  std::array<uint8_t, w::kSize> b{};
  w::encode(m, b);
  return b;
}

w::ParseError parse(std::span<const uint8_t> b) {
  w::Message out;
  return w::decode(b, out);
}

}  // namespace

TEST(RdmaWire, RoundTripsEveryType) {
  w::Message p = ping();
  w::Message pong;
  pong.type = w::Type::pong;
  pong.session = 7;
  pong.seq = 9;
  w::Message fu;
  fu.type = w::Type::followup;
  fu.flags = w::kHardware;
  fu.session = 7;
  fu.seq = 9;
  fu.delay_ns = 123456789;
  w::Message lid_ping;
  lid_ping.type = w::Type::ping;
  lid_ping.session = 1;
  lid_ping.seq = 1;
  lid_ping.lid = 0x1234;
  lid_ping.qkey = 0xdeadbeef;
  for (const auto& m : {p, pong, fu, lid_ping}) {
    auto b = bytes(m);
    w::Message out;
    ASSERT_EQ(w::decode(b, out), w::ParseError::ok);
    EXPECT_EQ(out.type, m.type);
    EXPECT_EQ(out.flags, m.flags);
    EXPECT_EQ(out.session, m.session);
    EXPECT_EQ(out.seq, m.seq);
    EXPECT_EQ(out.gid, m.gid);
    EXPECT_EQ(out.lid, m.lid);
    EXPECT_EQ(out.qkey, m.qkey);
    EXPECT_EQ(out.delay_ns, m.delay_ns);
  }
}

TEST(RdmaWire, LayoutIsNetworkOrder) {
  auto b = bytes(ping());
  EXPECT_EQ(b[0], 'W');
  EXPECT_EQ(b[1], 'F');
  EXPECT_EQ(b[2], 'R');
  EXPECT_EQ(b[3], 'D');
  EXPECT_EQ(b[4], w::kVersion);
  EXPECT_EQ(b[5], 1);
  EXPECT_EQ(b[8], 0x01);
  EXPECT_EQ(b[15], 0x08);
  EXPECT_EQ(b[23], 42);
  EXPECT_EQ(b[24], 0xa0);
  EXPECT_EQ(b[44], 0x11);
}

TEST(RdmaWire, RejectsEachBadField) {
  const auto good = bytes(ping());
  auto with = [&](size_t off, uint8_t v) {
    auto b = good;
    b[off] = v;
    return parse(b);
  };
  EXPECT_EQ(parse(std::span<const uint8_t>(good.data(), 63)), w::ParseError::size);
  std::array<uint8_t, 65> longer{};
  std::copy(good.begin(), good.end(), longer.begin());
  EXPECT_EQ(parse(longer), w::ParseError::size);
  EXPECT_EQ(with(0, 'X'), w::ParseError::magic);
  EXPECT_EQ(with(4, 2), w::ParseError::version);
  EXPECT_EQ(with(5, 0), w::ParseError::type);
  EXPECT_EQ(with(5, 4), w::ParseError::type);
  EXPECT_EQ(with(6, 0x80), w::ParseError::flags);
  EXPECT_EQ(with(6, w::kGlobal | w::kHardware), w::ParseError::flags);  // hardware is for follow-ups
  EXPECT_EQ(with(7, 1), w::ParseError::reserved);
  EXPECT_EQ(with(43, 1), w::ParseError::reserved);
  EXPECT_EQ(with(63, 1), w::ParseError::reserved);
  EXPECT_EQ(with(55, 1), w::ParseError::delay);  // a ping carries no delay
  auto zero_session = good;
  std::fill(zero_session.begin() + 8, zero_session.begin() + 16, 0);
  EXPECT_EQ(parse(zero_session), w::ParseError::session);
  auto zero_seq = good;
  std::fill(zero_seq.begin() + 16, zero_seq.begin() + 24, 0);
  EXPECT_EQ(parse(zero_seq), w::ParseError::seq);
}

TEST(RdmaWire, PingNeedsAReplyAddress) {
  w::Message m = ping();
  m.gid = {};
  EXPECT_EQ(parse(bytes(m)), w::ParseError::address);  // global without a GID
  m.flags = 0;
  EXPECT_EQ(parse(bytes(m)), w::ParseError::address);  // by LID without a LID
  m.lid = 5;
  EXPECT_EQ(parse(bytes(m)), w::ParseError::ok);
  m.gid[3] = 1;
  EXPECT_EQ(parse(bytes(m)), w::ParseError::address);  // a GID without the global flag is ambiguous
}

TEST(RdmaWire, PongAndFollowupCarryNoAddressAndSaneDelay) {
  w::Message m;
  m.type = w::Type::pong;
  m.session = 1;
  m.seq = 1;
  m.qkey = 3;
  EXPECT_EQ(parse(bytes(m)), w::ParseError::address);
  m.qkey = 0;
  m.delay_ns = 5;
  EXPECT_EQ(parse(bytes(m)), w::ParseError::delay);
  m.type = w::Type::followup;
  m.delay_ns = -1;
  EXPECT_EQ(parse(bytes(m)), w::ParseError::delay);
  m.delay_ns = 0;
  EXPECT_EQ(parse(bytes(m)), w::ParseError::ok);
  m.flags = w::kGlobal;
  EXPECT_EQ(parse(bytes(m)), w::ParseError::flags);
}

// The same property the fuzz target checks, with a fixed seed: random mutations of valid messages
// never crash the parser, and whatever it accepts re-encodes to exactly the same bytes.
TEST(RdmaWire, MutationsParseStrictlyOrRoundTrip) {
  std::mt19937_64 rng(12345);
  w::Message seeds[3] = {ping(), {}, {}};
  seeds[1].type = w::Type::pong;
  seeds[1].session = seeds[1].seq = 3;
  seeds[2].type = w::Type::followup;
  seeds[2].session = seeds[2].seq = 3;
  seeds[2].delay_ns = 1000;
  size_t accepted = 0;
  for (int i = 0; i < 200000; ++i) {
    auto b = bytes(seeds[i % 3]);
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) b[rng() % b.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    w::Message out;
    if (w::decode(b, out) == w::ParseError::ok) {
      ++accepted;
      EXPECT_EQ(bytes(out), b);
    }
  }
  EXPECT_GT(accepted, 0u);  // flips in session/seq/gid keep messages valid
}
