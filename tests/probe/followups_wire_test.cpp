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

// A reply carrying follow-ups (issue 17): a 48-byte reply and a follow-ups message for the same
// session in one datagram.
namespace {

Packet sample_reply(uint64_t session) {
  Packet r;
  r.type = Type::reply;
  r.flags = kRxKernel | kFollowupComing;
  r.session = session;
  r.seq = 200;
  r.prober_tx_ns = 1'700'000'000'000'000'000;
  r.responder_rx_ns = 1'700'000'000'000'010'000;
  r.responder_tx_ns = 1'700'000'000'000'020'000;
  return r;
}

std::vector<uint8_t> carrying(const Packet& r, const Followups& f) {
  std::vector<uint8_t> b(kMaxReplyFollowupsSize);
  b.resize(encode_reply_followups(r, f, b));
  return b;
}

}  // namespace

TEST(ReplyFollowupsWire, RoundTripsAndOlderParsersRejectIt) {
  const Followups f = sample(3);
  const Packet r = sample_reply(f.session);
  const auto b = carrying(r, f);
  ASSERT_EQ(b.size(), kSize + kFollowupsHeader + 3 * kFollowupsEntry);
  EXPECT_TRUE(is_reply_followups(b));
  EXPECT_FALSE(is_followups(b));
  Packet p;
  Followups g;
  ASSERT_EQ(decode_reply_followups(b, p, g), ParseError::ok);
  EXPECT_EQ(p.type, Type::reply);
  EXPECT_EQ(p.seq, r.seq);
  EXPECT_EQ(p.flags, r.flags);
  EXPECT_EQ(p.responder_tx_ns, r.responder_tx_ns);
  ASSERT_EQ(g.count, 3);
  EXPECT_EQ(g.entries[2].seq, f.entries[2].seq);
  EXPECT_EQ(g.entries[2].responder_tx_ns, f.entries[2].responder_tx_ns);
  // A prober from before this takes only 48-byte packets and follow-ups messages: it rejects the
  // datagram whole (and a responder sends it only to sessions that asked).
  EXPECT_EQ(decode(b, p), ParseError::size);
  EXPECT_NE(decode_followups(b, g), ParseError::ok);
  // The largest one fits the prober's receive buffer's bound.
  const auto big = carrying(r, sample(kMaxFollowups));
  EXPECT_EQ(big.size(), kMaxReplyFollowupsSize);
  EXPECT_EQ(decode_reply_followups(big, p, g), ParseError::ok);
}

TEST(ReplyFollowupsWire, RejectsEveryMalformedClassWithoutTouchingTheOutput) {
  const Followups f = sample(2);
  const auto good = carrying(sample_reply(f.session), f);
  auto parse = [](const std::vector<uint8_t>& b) {
    Packet p;
    p.seq = 4242;
    Followups g;
    g.count = 9;
    const ParseError e = decode_reply_followups(b, p, g);
    if (e != ParseError::ok) {
      EXPECT_EQ(p.seq, 4242u);
      EXPECT_EQ(g.count, 9);
    }
    return e;
  };
  auto with = [&](size_t i, uint8_t v) {
    auto b = good;
    b[i] = v;
    return b;
  };
  auto sized = [&](size_t n) {
    std::vector<uint8_t> b(n, 0);
    std::copy_n(good.begin(), std::min(n, good.size()), b.begin());
    return b;
  };
  EXPECT_EQ(parse(sized(kSize)), ParseError::size);  // a plain reply is not this
  EXPECT_EQ(parse(sized(kSize + kFollowupsHeader)), ParseError::size);
  EXPECT_EQ(parse(sized(good.size() - 1)), ParseError::size);
  EXPECT_EQ(parse(sized(kMaxReplyFollowupsSize + kFollowupsEntry)), ParseError::size);
  EXPECT_EQ(parse(with(5, 1)), ParseError::flags);          // the first part a probe (with a reply's flags)
  EXPECT_EQ(parse(with(5, 3)), ParseError::flags);          // ... a follow-up (no kernel transmit flag)
  EXPECT_EQ(parse(with(6, kTxKernel)), ParseError::flags);  // a reply never claims a kernel send time
  EXPECT_EQ(parse(with(kSize + 5, 3)), ParseError::type);   // the second part not a follow-ups message
  EXPECT_EQ(parse(with(kSize + 6, kRxKernel)), ParseError::flags);
  EXPECT_EQ(parse(with(kSize + 15, 0x19)), ParseError::session);  // another session's follow-ups
  EXPECT_EQ(parse(with(kSize + 7, 3)), ParseError::size);         // count says 3, 2 there
  Packet probe = sample_reply(f.session);
  probe.type = Type::probe;
  probe.flags = 0;
  probe.responder_rx_ns = probe.responder_tx_ns = 0;
  auto b = good;
  encode(probe, std::span<uint8_t, kSize>(b.data(), kSize));
  EXPECT_EQ(parse(b), ParseError::type);  // a valid probe followed by follow-ups
  EXPECT_FALSE(is_reply_followups(sized(kSize)));
}

TEST(ReplyFollowupsWire, EncodeRefusesWhatCannotBeSent) {
  const Followups f = sample(2);
  std::vector<uint8_t> out(kMaxReplyFollowupsSize);
  Packet r = sample_reply(f.session + 1);
  EXPECT_EQ(encode_reply_followups(r, f, out), 0u);  // not the same session
  r = sample_reply(f.session);
  r.type = Type::followup;
  EXPECT_EQ(encode_reply_followups(r, f, out), 0u);                                // not a reply
  EXPECT_EQ(encode_reply_followups(sample_reply(f.session), sample(0), out), 0u);  // nothing carried
  std::vector<uint8_t> small(kSize + kFollowupsHeader + kFollowupsEntry);
  EXPECT_EQ(encode_reply_followups(sample_reply(f.session), f, small), 0u);  // does not fit
}

TEST(ReplyFollowupsWire, SessionsSayWhetherTheProberReadsThem) {
  EXPECT_TRUE(replies_carry_followups_ok(kSessionCarryTag | 0x1234));
  EXPECT_TRUE(replies_carry_followups_ok(kSessionCarryTag));
  EXPECT_FALSE(replies_carry_followups_ok(0x1112131415161718ULL));
  EXPECT_FALSE(replies_carry_followups_ok((kSessionCarryTag ^ (1ULL << 63)) | 0x1234));
  EXPECT_FALSE(replies_carry_followups_ok(0x1234));
  // The tag leaves the stream bit (bit 0) free.
  EXPECT_EQ(kSessionCarryMask & kSessionNoStreamFollowups, 0u);
}
