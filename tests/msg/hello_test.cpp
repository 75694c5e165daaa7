#include "msg/hello.hpp"

#include <gtest/gtest.h>

#include "msg/kind.hpp"

using namespace weft::msg;

namespace {
Hello sample() {
  Hello h;
  h.kind = Kind::faa_ring;
  h.max_message = 65536;
  h.slots = 64;
  h.ring_bytes = 1 << 20;
  h.qp.qpn = 0x123456;
  h.qp.psn = 0xabcdef;
  h.qp.lid = 7;
  for (int i = 0; i < 16; ++i) h.qp.gid.raw[i] = static_cast<uint8_t>(i * 3);
  h.inbox = {0x7f0000001000, 0x11, 2 << 20};
  h.outbox = {0x7f0000400000, 0x22, 4096};
  h.ctrl = {0x7f0000800000, 0x33, 64};
  return h;
}
}  // namespace

TEST(Hello, RoundTrips) {
  const Hello h = sample();
  auto w = h.encode();
  auto d = Hello::decode(w);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->kind, h.kind);
  EXPECT_EQ(d->max_message, h.max_message);
  EXPECT_EQ(d->slots, h.slots);
  EXPECT_EQ(d->ring_bytes, h.ring_bytes);
  EXPECT_EQ(d->qp.qpn, h.qp.qpn);
  EXPECT_EQ(d->qp.psn, h.qp.psn);
  EXPECT_EQ(d->qp.lid, h.qp.lid);
  EXPECT_EQ(0, std::memcmp(d->qp.gid.raw, h.qp.gid.raw, 16));
  EXPECT_EQ(d->inbox.addr, h.inbox.addr);
  EXPECT_EQ(d->inbox.rkey, h.inbox.rkey);
  EXPECT_EQ(d->inbox.length, h.inbox.length);
  EXPECT_EQ(d->outbox.addr, h.outbox.addr);
  EXPECT_EQ(d->ctrl.rkey, h.ctrl.rkey);
  EXPECT_TRUE(Hello::compatible(h, *d));
}

TEST(Hello, RefusesWhatIsNotAHello) {
  auto w = sample().encode();
  EXPECT_FALSE(Hello::decode(std::span(w).first(Hello::kWireSize - 1)));
  auto bad = w;
  bad[0] = std::byte{0};
  EXPECT_NE(Hello::decode(bad).error().message.find("bad magic"), std::string::npos);
  bad = w;
  bad[4] = std::byte{9};  // version
  EXPECT_NE(Hello::decode(bad).error().message.find("version 9"), std::string::npos);
  bad = w;
  bad[6] = std::byte{200};  // kind
  EXPECT_NE(Hello::decode(bad).error().message.find("unknown connection type 200"), std::string::npos);
  bad = w;
  bad[27] = std::byte{1};  // QPN bit 24
  EXPECT_FALSE(Hello::decode(bad));
  for (size_t reserved : {size_t{7}, size_t{36}, size_t{111}}) {
    bad = w;
    bad[reserved] = std::byte{1};
    EXPECT_NE(Hello::decode(bad).error().message.find("reserved bytes not zero"), std::string::npos)
        << reserved;
  }
}

TEST(Hello, MismatchesNameBothValues) {
  Hello a = sample(), b = sample();
  b.kind = Kind::send_recv;
  auto s = Hello::compatible(a, b);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "peer runs connection type send-recv, we run faa-ring");
  b = sample();
  b.max_message = 4096;
  EXPECT_EQ(Hello::compatible(a, b).error().message, "peer has max message 4096 bytes, we have 65536");
  b = sample();
  b.slots = 8;
  EXPECT_FALSE(Hello::compatible(a, b));
  b = sample();
  b.ring_bytes = 4096;
  EXPECT_FALSE(Hello::compatible(a, b));
}

TEST(Kind, NamesRoundTrip) {
  for (Kind k : all_kinds()) {
    auto p = parse_kind(to_string(k));
    ASSERT_TRUE(p) << to_string(k);
    EXPECT_EQ(*p, k);
  }
  EXPECT_FALSE(parse_kind("ring"));
  EXPECT_EQ(all_kinds().size(), 7u);
  // The N:1 shared ring parses but is not among the duplex types `--type all` runs.
  auto s = parse_kind("shared-ring");
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, Kind::shared_ring);
  EXPECT_EQ(to_string(Kind::shared_ring), "shared-ring");
  for (Kind k : all_kinds()) EXPECT_NE(k, Kind::shared_ring);
}
