// Kernel software timestamps on loopback: receive times come with datagrams, send times come back
// on the error queue numbered by OPT_ID.
#include "net/timestamping.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <thread>

#include "base/clock.hpp"
#include "net/address.hpp"
#include "net/socket.hpp"

using namespace weft;

TEST(Timestamping, LoopbackGivesKernelRxAndNumberedTxTimes) {
  auto addr = net::SocketAddress::parse_ip("127.0.0.1", 0);
  auto a = net::udp_socket(*addr);
  auto b = net::udp_socket(*addr);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(net::enable_timestamping(a->get(), true));
  ASSERT_TRUE(net::enable_timestamping(b->get(), false));
  // The kernel switches receive stamping on for the whole system from a work queue: when no
  // other socket had it on, the first packets after enabling may still come unstamped.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto to = net::local_address(b->get());
  ASSERT_TRUE(to);
  const int64_t before = realtime_ns();
  for (int i = 0; i < 3; ++i) {
    char byte = static_cast<char>(i);
    ASSERT_EQ(sendto(a->get(), &byte, 1, 0, to->sa(), to->length), 1);
  }
  for (int i = 0; i < 3; ++i) {
    char data[8];
    alignas(cmsghdr) char ctrl[net::kControlBytes];
    iovec iov{data, sizeof data};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctrl;
    m.msg_controllen = sizeof ctrl;
    ASSERT_EQ(recvmsg(b->get(), &m, 0), 1);
    net::KernelTime t;
    ASSERT_TRUE(net::parse_rx_time(m, t));
    EXPECT_GE(t.software_ns, before);
    EXPECT_LE(t.software_ns, realtime_ns());
  }
  for (uint32_t i = 0; i < 3; ++i) {
    char data[8];
    alignas(cmsghdr) char ctrl[net::kControlBytes];
    iovec iov{data, sizeof data};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctrl;
    m.msg_controllen = sizeof ctrl;
    ASSERT_GE(recvmsg(a->get(), &m, MSG_ERRQUEUE | MSG_DONTWAIT), 0);
    net::TxTimestamp ts;
    ASSERT_TRUE(net::parse_tx_timestamp(m, ts));
    EXPECT_EQ(ts.id, i);
    EXPECT_GE(ts.time.software_ns, before);
  }
}

TEST(Timestamping, UntimestampedSendsProbeIsStable) {
  // Whatever the kernel does, the answer must be the same every time (it is cached).
  EXPECT_EQ(net::untimestamped_sends_skip_ids(), net::untimestamped_sends_skip_ids());
}
