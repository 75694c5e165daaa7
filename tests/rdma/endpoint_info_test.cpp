#include "rdma/endpoint_info.hpp"

#include <gtest/gtest.h>

#include "rdma/gid_table.hpp"

using namespace weft::rdma;

TEST(EndpointInfo, RoundTrips) {
  EndpointInfo e;
  e.qp.qpn = 0x123456;
  e.qp.psn = 0xabcdef;
  e.qp.lid = 0x1234;
  e.qp.gid = *gid_from_string("::ffff:10.9.0.2");
  e.buf = RemoteBuf{0x7f00dead0000ull, 0xbeef, 4096};
  e.qkey = 0x11111111;
  auto w = e.encode();
  static_assert(EndpointInfo::kWireSize <= 56, "must fit rdma_cm connect private data");
  auto d = EndpointInfo::decode(w);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->qp.qpn, e.qp.qpn);
  EXPECT_EQ(d->qp.psn, e.qp.psn);
  EXPECT_EQ(d->qp.lid, e.qp.lid);
  EXPECT_EQ(gid_to_string(d->qp.gid), gid_to_string(e.qp.gid));
  EXPECT_EQ(d->buf.addr, e.buf.addr);
  EXPECT_EQ(d->buf.rkey, e.buf.rkey);
  EXPECT_EQ(d->buf.length, e.buf.length);
  EXPECT_EQ(d->qkey, e.qkey);
}

TEST(EndpointInfo, IsLittleEndianOnTheWire) {
  EndpointInfo e;
  e.qp.qpn = 0x010203;
  auto w = e.encode();
  EXPECT_EQ(w[4], std::byte{0x03});
  EXPECT_EQ(w[5], std::byte{0x02});
  EXPECT_EQ(w[6], std::byte{0x01});
}

TEST(EndpointInfo, RejectsShortOrForeignBytes) {
  EndpointInfo e;
  auto w = e.encode();
  EXPECT_FALSE(EndpointInfo::decode(std::span(w).first(10)));
  w[0] = std::byte{0};
  auto d = EndpointInfo::decode(w);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("magic"), std::string::npos);
  EndpointInfo big;
  big.qp.qpn = 0x1000000;  // QPNs are 24 bits
  EXPECT_FALSE(EndpointInfo::decode(big.encode()));
}
