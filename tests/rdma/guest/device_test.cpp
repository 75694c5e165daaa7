#include <algorithm>

#include "guest_helpers.hpp"

using namespace wrd;

TEST(GuestDevice, ListsAndOpensRxe) {
  auto names = must(Device::list(), "list");
  EXPECT_NE(std::find(names.begin(), names.end(), "rxe0"), names.end());
  auto d = must(Device::open("rxe0"), "open rxe0");
  EXPECT_EQ(d.name(), "rxe0");
  auto missing = Device::open("mlx5_9");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("rxe0"), std::string::npos) << missing.error().message;
}

TEST(GuestDevice, PortGidAndLid) {
  auto p = must(device().port(1), "port");
  EXPECT_TRUE(p.active());
  EXPECT_TRUE(p.is_ethernet());
  EXPECT_GT(p.gid_table_len, 1);
  EXPECT_EQ(must(device().lid(1), "lid"), 0);  // RoCE has no LIDs
  auto g = must(device().roce_v2_gid(local_in_addr()), "gid");
  EXPECT_EQ(g.index, 1u);  // lab.md: index 1 is ::ffff:<address> on rxe
  EXPECT_EQ(g.type, GidType::roce_v2);
  auto table = must(device().gid_table(1), "table");
  EXPECT_GE(table.size(), 2u);
  in_addr other{};
  inet_pton(AF_INET, "192.0.2.1", &other);
  EXPECT_FALSE(device().roce_v2_gid(other));
}

TEST(GuestDevice, CapsAndNoCompletionTimestampsOnRxe) {
  auto c = must(device().caps(), "caps");
  EXPECT_GT(c.max_qp_wr, 0);
  EXPECT_TRUE(c.atomics);
  auto clk = device().clock();
  ASSERT_FALSE(clk);
  EXPECT_NE(clk.error().message.find("completion timestamps not supported by rxe0"), std::string::npos)
      << clk.error().message;
  auto cq = ExtendedCq::create(device(), 16, /*timestamps=*/true);
  ASSERT_FALSE(cq);
  EXPECT_NE(cq.error().message.find("not supported"), std::string::npos) << cq.error().message;
}

TEST(GuestDevice, QpStateTransitions) {
  auto pd = must(ProtectionDomain::create(device()), "pd");
  Side a = make_side(pd), b = make_side(pd);
  auto o = connect_options();
  EXPECT_EQ(must(a.qp.state(), "state"), IBV_QPS_RESET);
  must(a.qp.to_init(o), "init");
  EXPECT_EQ(must(a.qp.state(), "state"), IBV_QPS_INIT);
  must(a.qp.to_rtr(o, address_of(b.qp, 1)), "rtr");
  EXPECT_EQ(must(a.qp.state(), "state"), IBV_QPS_RTR);
  must(a.qp.to_rts(o, 2), "rts");
  EXPECT_EQ(must(a.qp.state(), "state"), IBV_QPS_RTS);
  must(a.qp.to_error(), "err");
  EXPECT_EQ(must(a.qp.state(), "state"), IBV_QPS_ERR);
  must(a.qp.reset(), "reset");
  EXPECT_EQ(must(a.qp.state(), "state"), IBV_QPS_RESET);
  // A skipped transition fails with the verb named.
  auto bad = b.qp.to_rts(o, 1);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("ibv_modify_qp"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("RTS"), std::string::npos);
}

TEST(GuestDevice, MemoryRegionOverCallerMemory) {
  auto pd = must(ProtectionDomain::create(device()), "pd");
  std::vector<char> mine(1000, 'x');
  auto mr = must(MemoryRegion::register_memory(pd, mine.data(), mine.size(), access::local), "reg");
  EXPECT_EQ(static_cast<void*>(mr.data()), static_cast<void*>(mine.data()));
  EXPECT_EQ(mr.size(), 1000u);
  EXPECT_EQ(mr.access_flags(), access::local);
  auto l = mr.local(100, 50);
  EXPECT_EQ(l.length, 50u);
  EXPECT_EQ(l.lkey, mr.lkey());
  auto r = mr.remote(10);
  EXPECT_EQ(r.length, 990u);
  EXPECT_EQ(r.rkey, mr.rkey());
}
