// Connection set-up both ways: the TCP side channel and rdma_cm with private data.
#include <cstring>
#include <thread>

#include "guest_helpers.hpp"
#include "rdma/cm_connection.hpp"
#include "rdma/endpoint_info.hpp"
#include "rdma/side_channel.hpp"

using namespace wrd;

namespace {
// Runs fn on a thread; returns the error text it threw, if any.
struct Peer {
  std::string error;
  std::jthread t;
  template <typename F>
  explicit Peer(F fn)
      : t([this, fn] {
          try {
            fn();
          } catch (const std::exception& e) {
            error = e.what();
          }
        }) {}
};
}  // namespace

TEST(Connect, TcpSideChannelRcWriteAndSend) {
  auto listener = must(SideChannel::listen(local_ip(), 0), "listen");
  const uint16_t port = must(listener.port(), "port");
  // Server: a buffer the client writes into, and a receive for the client's "done" SEND.
  auto spd = must(ProtectionDomain::create(device()), "pd");
  Side server = make_side(spd);
  Peer srv([&] {
    auto conn = must(listener.accept(5s), "accept");
    EndpointInfo mine{address_of(server.qp, 0x100), server.mr.remote(0, 1024), 0};
    auto theirs = must(conn.exchange(mine, 5s), "exchange");
    must(server.qp.connect(connect_options(), 0x100, theirs.qp), "connect");
    // Receives can be posted from INIT on; the barrier tells the client one is there.
    auto r = RecvWr::into(server.mr.local(2048, 64), 1);
    must(server.qp.post_recv(r), "recv");
    must(conn.barrier(5s), "barrier");
    wait_ok(server.rcq);
  });
  auto cpd = must(ProtectionDomain::create(device()), "pd");
  Side client = make_side(cpd);
  auto conn = must(SideChannel::connect(local_ip(), port, 5s), "connect");
  EndpointInfo mine{address_of(client.qp, 0x200), {}, 0};
  auto exchanged = conn.exchange(mine, 5s);
  if (!exchanged) srv.t.join();
  ASSERT_TRUE(exchanged) << exchanged.error().message << "; server: " << srv.error;
  auto theirs = *exchanged;
  EXPECT_EQ(theirs.qp.qpn, server.qp.qpn());
  EXPECT_EQ(theirs.buf.length, 1024u);
  must(client.qp.connect(connect_options(), 0x200, theirs.qp), "connect");
  must(conn.barrier(5s), "barrier");
  for (int i = 0; i < 1024; ++i) client.mr.data()[i] = static_cast<std::byte>(i ^ 0x5a);
  auto w = SendWr::write(client.mr.local(0, 1024), theirs.buf, 1);
  auto s = SendWr::send(client.mr.local(0, 4), 2);
  must(client.qp.post_send(w), "write");
  must(client.qp.post_send(s), "send");
  wait_ok(client.scq);
  wait_ok(client.scq);
  srv.t.join();
  ASSERT_EQ(srv.error, "");
  EXPECT_EQ(std::memcmp(client.mr.data(), server.mr.data(), 1024), 0);
}

TEST(Connect, RdmaCmWithPrivateData) {
  auto listener = must(CmListener::listen(local_ip(), 0), "cm listen");
  const uint16_t port = must(listener.port(), "port");
  EXPECT_NE(port, 0);
  CmOptions o;
  o.timeout = 10s;
  // The server's region, registered in prepare (its PD only exists once rdma_cm picked the device).
  std::optional<MemoryRegion> smr;
  std::vector<std::byte> seen_by_server;
  Peer srv([&] {
    EndpointInfo hello;  // rkey/addr are filled in after prepare; private data travels with accept
    auto conn = must(listener.accept({}, o,
                                     [&](CmConnection& c) -> weft::Status {
                                       auto mr = MemoryRegion::allocate(c.pd(), 4096);
                                       if (!mr) return std::unexpected(mr.error());
                                       smr.emplace(std::move(*mr));
                                       auto r = RecvWr::into(smr->local(0, 128), 1);
                                       return c.qp().post_recv(r);
                                     }),
                     "accept");
    auto pd = conn.peer_private_data();
    seen_by_server.assign(pd.begin(), pd.end());
    ibv_wc wc = wait_ok(conn.cq(), WaitMode::channel);
    if (wc.opcode != IBV_WC_RECV) throw std::runtime_error("expected RECV");
    // Answer with a SEND so the client knows the data is here.
    std::memcpy(smr->data() + 1024, smr->data(), wc.byte_len);
    auto s = SendWr::send(smr->local(1024, wc.byte_len), 2);
    must(conn.qp().post_send(s), "echo");
    wait_ok(conn.cq(), WaitMode::channel);
  });
  // The client's private data: an EndpointInfo naming nothing but a marker qkey.
  EndpointInfo greeting;
  greeting.qkey = 0xfeedbeef;
  auto wire = greeting.encode();
  std::optional<MemoryRegion> cmr;
  auto conn = must(CmConnection::connect(local_ip(), port, wire, o,
                                         [&](CmConnection& c) -> weft::Status {
                                           auto mr = MemoryRegion::allocate(c.pd(), 4096);
                                           if (!mr) return std::unexpected(mr.error());
                                           cmr.emplace(std::move(*mr));
                                           auto r = RecvWr::into(cmr->local(2048, 128), 7);
                                           return c.qp().post_recv(r);
                                         }),
                   "cm connect");
  EXPECT_EQ(conn.device().name(), "rxe0");
  std::strcpy(reinterpret_cast<char*>(cmr->data()), "through rdma_cm");
  auto s = SendWr::send(cmr->local(0, 16), 1);
  must(conn.qp().post_send(s), "send");
  int recvs = 0;
  for (int i = 0; i < 2; ++i) recvs += wait_ok(conn.cq(), WaitMode::channel).opcode == IBV_WC_RECV;
  EXPECT_EQ(recvs, 1);
  srv.t.join();
  ASSERT_EQ(srv.error, "");
  EXPECT_STREQ(reinterpret_cast<char*>(cmr->data()) + 2048, "through rdma_cm");
  auto got = EndpointInfo::decode(seen_by_server);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->qkey, 0xfeedbeefu);
  must(conn.disconnect(), "disconnect");
}

TEST(Connect, RdmaCmToNobodyFailsWithinTimeout) {
  CmOptions o;
  o.timeout = 2s;
  auto t0 = std::chrono::steady_clock::now();
  auto c = CmConnection::connect(local_ip(), 47099, {}, o);
  ASSERT_FALSE(c);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  EXPECT_NE(c.error().message.find("rdma_cm"), std::string::npos) << c.error().message;
}
