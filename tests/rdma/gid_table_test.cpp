#include "rdma/gid_table.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <vector>

using namespace weft::rdma;

namespace {
in_addr ip(const char* s) {
  in_addr a{};
  inet_pton(AF_INET, s, &a);
  return a;
}
GidEntry entry(uint32_t index, GidType t, const char* text) {
  GidEntry e;
  e.index = index;
  e.type = t;
  e.gid = *gid_from_string(text);
  return e;
}
}  // namespace

TEST(Gid, Ipv4MappedRoundTrip) {
  ibv_gid g = gid_from_ipv4(ip("10.9.0.1"));
  EXPECT_EQ(gid_to_string(g), "0000:0000:0000:0000:0000:ffff:0a09:0001");
  auto back = ipv4_of_gid(g);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->s_addr, ip("10.9.0.1").s_addr);
  EXPECT_FALSE(ipv4_of_gid(*gid_from_string("fe80::1")));
}

TEST(Gid, ParsesSysfsAndShortForms) {
  auto a = gid_from_string("0000:0000:0000:0000:0000:ffff:0a09:0001");
  auto b = gid_from_string("::ffff:10.9.0.1");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(gid_to_string(*a), gid_to_string(*b));
  EXPECT_FALSE(gid_from_string("not a gid"));
  EXPECT_TRUE(gid_is_zero(ibv_gid{}));
  EXPECT_FALSE(gid_is_zero(*a));
}

TEST(Gid, PicksTheRoceV2EntryForTheAddress) {
  // rxe0 over dummy0 10.9.0.1: index 0 is the link-local GID, 1 the IPv4-mapped RoCE v2 one.
  std::vector<GidEntry> t = {
      entry(0, GidType::roce_v2, "fe80::ac91:c8ff:fef0:dd3d"),
      entry(1, GidType::roce_v2, "::ffff:10.9.0.1"),
  };
  auto e = pick_roce_v2_gid(t, ip("10.9.0.1"));
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->index, 1u);
  auto any = first_roce_v2_ipv4_gid(t);
  ASSERT_TRUE(any);
  EXPECT_EQ(any->index, 1u);
}

TEST(Gid, SkipsRoceV1WithTheSameAddress) {
  // mlx5 lists each address twice: RoCE v1 first, then v2.
  std::vector<GidEntry> t = {
      entry(0, GidType::roce_v1, "fe80::1"),
      entry(1, GidType::roce_v2, "fe80::1"),
      entry(2, GidType::roce_v1, "::ffff:192.168.1.5"),
      entry(3, GidType::roce_v2, "::ffff:192.168.1.5"),
  };
  auto e = pick_roce_v2_gid(t, ip("192.168.1.5"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->index, 3u);
}

TEST(Gid, NoEntryForAnUnknownAddressNamesIt) {
  std::vector<GidEntry> t = {entry(1, GidType::roce_v2, "::ffff:10.9.0.1")};
  auto e = pick_roce_v2_gid(t, ip("10.9.0.2"));
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("10.9.0.2"), std::string::npos) << e.error().message;
  EXPECT_FALSE(first_roce_v2_ipv4_gid(std::vector<GidEntry>{entry(0, GidType::ib, "fe80::1")}));
}
