#include "rdma/side_channel.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <thread>

#include "rdma/gid_table.hpp"

using namespace weft;
using namespace weft::rdma;
using namespace std::chrono_literals;

TEST(SideChannel, ExchangesEndpointInfoOnLoopback) {
  auto l = SideChannel::listen("127.0.0.1", 0);
  ASSERT_TRUE(l) << l.error().message;
  auto port = l->port();
  ASSERT_TRUE(port);
  EndpointInfo server_info, client_info;
  server_info.qp.qpn = 17;
  server_info.buf = {0x1000, 5, 64};
  client_info.qp.qpn = 18;
  client_info.qp.gid = *gid_from_string("::ffff:10.9.0.2");
  Result<EndpointInfo> got_by_server = fail("not run");
  std::thread t([&] {
    auto c = l->accept(5s);
    if (!c) {
      got_by_server = std::unexpected(c.error());
      return;
    }
    got_by_server = c->exchange(server_info, 5s);
    if (got_by_server) (void)c->barrier(5s);
  });
  auto c = SideChannel::connect("127.0.0.1", *port, 5s);
  ASSERT_TRUE(c) << c.error().message;
  auto got = c->exchange(client_info, 5s);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_TRUE(c->barrier(5s));
  t.join();
  ASSERT_TRUE(got_by_server) << got_by_server.error().message;
  EXPECT_EQ(got->qp.qpn, 17u);
  EXPECT_EQ(got->buf.rkey, 5u);
  EXPECT_EQ(got_by_server->qp.qpn, 18u);
  EXPECT_EQ(gid_to_string(got_by_server->qp.gid), gid_to_string(client_info.qp.gid));
}

TEST(SideChannel, TimesOutInsteadOfHanging) {
  auto l = SideChannel::listen("127.0.0.1", 0);
  ASSERT_TRUE(l);
  auto a = l->accept(50ms);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, ETIMEDOUT);
  auto c = SideChannel::connect("127.0.0.1", *l->port(), 2s);
  ASSERT_TRUE(c);
  std::byte b[4];
  auto r = c->recv_all(b, 50ms);  // nobody sends
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ETIMEDOUT);
}

TEST(SideChannel, ConnectToClosedPortFailsWithinTheTimeout) {
  uint16_t port;
  {
    auto l = SideChannel::listen("127.0.0.1", 0);
    ASSERT_TRUE(l);
    port = *l->port();
  }
  auto start = std::chrono::steady_clock::now();
  auto c = SideChannel::connect("127.0.0.1", port, 300ms);
  EXPECT_FALSE(c);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_NE(c.error().message.find("connect 127.0.0.1"), std::string::npos) << c.error().message;
}

TEST(SideChannel, PeerCloseIsAnError) {
  auto l = SideChannel::listen("127.0.0.1", 0);
  ASSERT_TRUE(l);
  auto c = SideChannel::connect("127.0.0.1", *l->port(), 2s);
  ASSERT_TRUE(c);
  {
    auto s = l->accept(2s);
    ASSERT_TRUE(s);
  }  // closed
  auto r = c->exchange(EndpointInfo{}, 2s);
  ASSERT_FALSE(r);
}

TEST(SideChannel, ExchangesRecordsAndRefusesOversizedOnes) {
  auto l = SideChannel::listen("127.0.0.1", 0);
  ASSERT_TRUE(l);
  std::vector<std::byte> big(300, std::byte{7}), small(3, std::byte{9});
  Result<std::vector<std::byte>> got_by_server = fail("not run");
  std::thread t([&] {
    auto c = l->accept(5s);
    if (!c) return;
    got_by_server = c->exchange_record(big, 16, 5s);
  });
  auto c = SideChannel::connect("127.0.0.1", *l->port(), 5s);
  ASSERT_TRUE(c);
  auto got = c->exchange_record(small, 1000, 5s);
  t.join();
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(*got, big);
  // The server allowed 16 bytes and was sent 3: fine. The reverse direction is tested below.
  ASSERT_TRUE(got_by_server) << got_by_server.error().message;
  EXPECT_EQ(*got_by_server, small);
  std::thread t2([&] {
    auto c2 = l->accept(5s);
    if (!c2) return;
    (void)c2->exchange_record(big, 1000, 5s);
  });
  auto c2 = SideChannel::connect("127.0.0.1", *l->port(), 5s);
  ASSERT_TRUE(c2);
  auto refused = c2->exchange_record(small, 16, 5s);
  t2.join();
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("300 bytes, at most 16"), std::string::npos)
      << refused.error().message;
}

// A refused connect is the answer at once with retry_refused false (a server that listened a
// moment ago and refuses now is gone); the default keeps retrying until its limit.
TEST(SideChannel, ConnectWithoutRetryTakesARefusalAtOnce) {
  uint16_t port;
  {
    auto l = SideChannel::listen("127.0.0.1", 0);
    ASSERT_TRUE(l);
    port = *l->port();
  }
  auto start = std::chrono::steady_clock::now();
  auto c = SideChannel::connect("127.0.0.1", port, 3s, false);
  EXPECT_FALSE(c);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_EQ(c.error().code, ECONNREFUSED) << c.error().message;
  start = std::chrono::steady_clock::now();
  c = SideChannel::connect("127.0.0.1", port, 400ms);
  EXPECT_FALSE(c);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 400ms);
}

// Bytes the peer sent (a barrier it reached first) do not count as closed; its close does.
TEST(SideChannel, PeerClosedWithinSeesTheCloseNotTheBytes) {
  auto l = SideChannel::listen("127.0.0.1", 0);
  ASSERT_TRUE(l);
  auto c = SideChannel::connect("127.0.0.1", *l->port(), 2s);
  ASSERT_TRUE(c);
  auto accepted = l->accept(2s);
  ASSERT_TRUE(accepted);
  std::optional<SideChannel> peer(std::move(*accepted));
  std::byte b{0x42};
  ASSERT_TRUE(peer->send_all({&b, 1}, 1s));
  EXPECT_FALSE(c->peer_closed_within(50ms));
  std::thread closer([&] {
    std::this_thread::sleep_for(100ms);
    peer.reset();  // closes the peer's end
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(c->peer_closed_within(2s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  closer.join();
}
