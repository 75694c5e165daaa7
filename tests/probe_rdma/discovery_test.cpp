#include "probe/rdma/discovery.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <thread>

#include "net/socket.hpp"

using namespace weft;
using namespace weft::probe;
namespace d = weft::probe::rdma_discovery;

namespace {
RdmaAddress sample() {
  RdmaAddress a;
  a.device = "rxe0";
  a.port = 1;
  a.ethernet = true;
  a.gid_index = 1;
  a.qpn = 0x123456;
  a.qkey = 0x11111111;
  a.gid.raw[10] = 0xff;
  a.gid.raw[11] = 0xff;
  a.gid.raw[12] = 10;
  a.gid.raw[15] = 1;
  return a;
}
}  // namespace

TEST(RdmaDiscovery, ReplyRoundTripsAndParsesStrictly) {
  auto b = d::encode_reply(sample());
  auto a = d::decode_reply(b);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->qpn, 0x123456u);
  EXPECT_EQ(a->qkey, 0x11111111u);
  EXPECT_EQ(a->gid_index, 1);
  EXPECT_TRUE(a->ethernet);
  EXPECT_EQ(std::memcmp(a->gid.raw, sample().gid.raw, 16), 0);
  for (size_t i : {0ul, 4ul, 5ul, 7ul, 20ul}) {
    auto bad = b;
    bad[i] ^= 0x40;
    EXPECT_FALSE(d::decode_reply(bad)) << "byte " << i;
  }
  EXPECT_FALSE(d::decode_reply(std::span<const uint8_t>(b.data(), b.size() - 1)));
  auto no_addr = sample();
  no_addr.gid = {};
  EXPECT_FALSE(d::decode_reply(d::encode_reply(no_addr)));  // neither GID nor LID
  no_addr.lid = 7;
  no_addr.ethernet = false;
  EXPECT_TRUE(d::decode_reply(d::encode_reply(no_addr)));  // InfiniBand by LID
  auto qp1 = sample();
  qp1.qpn = 1;
  EXPECT_FALSE(d::decode_reply(d::encode_reply(qp1)));
}

TEST(RdmaDiscovery, RequestIsStrict) {
  auto r = d::encode_request();
  EXPECT_TRUE(d::is_request(r));
  auto bad = r;
  bad[6] = 1;
  EXPECT_FALSE(d::is_request(bad));
  EXPECT_FALSE(d::is_request(std::span<const uint8_t>(r.data(), 7)));
}

TEST(RdmaDiscovery, ServerAnswersOnLoopbackAndIgnoresGarbage) {
  auto srv = d::Server::start("127.0.0.1", 0, sample());
  ASSERT_TRUE(srv) << srv.error().message;
  // Garbage first: counted, not answered.
  auto to = net::SocketAddress::parse_ip("127.0.0.1", (*srv)->port());
  ASSERT_TRUE(to);
  auto fd = net::udp_socket(*net::SocketAddress::parse_ip("127.0.0.1", 0));
  ASSERT_TRUE(fd);
  const char junk[] = "hello";
  ASSERT_GT(sendto(fd->get(), junk, sizeof junk, 0, to->sa(), to->length), 0);
  auto a = d::query("127.0.0.1", (*srv)->port(), std::chrono::milliseconds(3000));
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->qpn, 0x123456u);
  // The server counts a reply after sendto() returns, so the client can hold the answer a moment
  // before the counter moves: wait for it (bounded) instead of racing the server thread.
  for (int i = 0; i < 200 && (*srv)->answered() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ((*srv)->answered(), 1u);
  EXPECT_EQ((*srv)->rejected(), 1u);
}

TEST(RdmaDiscovery, QueryWithoutServerTimesOutClearly) {
  // A port nobody listens on (bound and closed right away by us).
  uint16_t port = 0;
  {
    auto fd = net::udp_socket(*net::SocketAddress::parse_ip("127.0.0.1", 0));
    ASSERT_TRUE(fd);
    port = net::local_address(fd->get())->port();
  }
  auto a = d::query("127.0.0.1", port, std::chrono::milliseconds(300));
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("no answer"), std::string::npos) << a.error().message;
}
