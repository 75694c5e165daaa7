// Kernel timestamps on a TCP stream carrying fixed-size frames: transmit stamps keyed by byte
// offset (FrameTxKeys maps them back to frames, across the 32-bit wrap), and the receive stamp of a
// read given only to the frame that ends it (frame_reader.hpp).
#include "net/stream_timestamps.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <thread>
#include <vector>

#include "base/clock.hpp"
#include "net/address.hpp"
#include "net/frame_reader.hpp"
#include "net/socket.hpp"

using namespace weft;

namespace {

constexpr size_t kFrame = 48;

// A connected loopback pair: {client, server}.
std::pair<Fd, Fd> tcp_pair() {
  auto l = net::tcp_listener(*net::SocketAddress::parse_ip("127.0.0.1", 0), 4);
  EXPECT_TRUE(l);
  auto c = net::tcp_connect_start(*net::SocketAddress::parse_ip("0.0.0.0", 0), *net::local_address(l->get()));
  EXPECT_TRUE(c);
  pollfd p{l->get(), POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 2000), 1);
  Fd s(accept4(l->get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  pollfd q{c->get(), POLLOUT, 0};
  EXPECT_EQ(poll(&q, 1, 2000), 1);
  return {std::move(*c), std::move(s)};
}

bool wait_readable(int fd, int events = POLLIN) {
  pollfd p{fd, static_cast<short>(events), 0};
  return poll(&p, 1, 2000) == 1;
}

}  // namespace

TEST(FrameTxKeys, KeysAreTheLastByteOfEachFrame) {
  net::FrameTxKeys<kFrame> k;
  EXPECT_EQ(k.frame_of(47, 64), -1);  // nothing written yet
  EXPECT_EQ(k.next_key(), 47u);
  k.wrote_frame();
  EXPECT_EQ(k.next_key(), 95u);
  k.wrote_frame();
  k.wrote_frame();
  EXPECT_EQ(k.frame_of(47, 64), 0);
  EXPECT_EQ(k.frame_of(95, 64), 1);
  EXPECT_EQ(k.frame_of(143, 64), 2);
  EXPECT_EQ(k.frame_of(191, 64), -1);  // not written yet
  EXPECT_EQ(k.frame_of(100, 64), -1);  // not the end of a frame
  EXPECT_EQ(k.frame_of(47, 2), -1);    // older than asked for
  EXPECT_EQ(k.frame_of(95, 2), 1);
}

TEST(FrameTxKeys, SurvivesTheWrapOfTheByteCounter) {
  net::FrameTxKeys<kFrame> k;
  // 2^32 is not a multiple of 48: frame ends do not repeat with the same residue after a wrap.
  const uint64_t frames = (uint64_t{1} << 32) / kFrame + 3;
  for (uint64_t i = 0; i < frames; ++i) k.wrote_frame();
  const uint32_t newest = static_cast<uint32_t>(frames * kFrame - 1);
  EXPECT_EQ(k.frame_of(newest, 64), static_cast<int64_t>(frames - 1));
  EXPECT_EQ(k.frame_of(static_cast<uint32_t>(newest - 10 * kFrame), 64), static_cast<int64_t>(frames - 11));
  EXPECT_EQ(k.next_key(), static_cast<uint32_t>(newest + kFrame));
}

TEST(StreamTimestamps, SendStampsAreNumberedByByteOffset) {
  auto [c, s] = tcp_pair();
  ASSERT_TRUE(net::enable_stream_timestamping(c.get()));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  net::FrameTxKeys<kFrame> keys;
  std::vector<uint32_t> sent_keys;
  const int64_t before = realtime_ns();
  for (int i = 0; i < 3; ++i) {
    uint8_t frame[kFrame] = {static_cast<uint8_t>(i)};
    sent_keys.push_back(keys.next_key());
    ASSERT_EQ(send(c.get(), frame, sizeof frame, MSG_NOSIGNAL), static_cast<ssize_t>(kFrame));
    keys.wrote_frame();
  }
  EXPECT_EQ(sent_keys, (std::vector<uint32_t>{47, 95, 143}));
  std::vector<int64_t> frames;
  for (int tries = 0; tries < 200 && frames.size() < 3; ++tries) {
    net::read_tx_timestamps(c.get(), [&](const net::TxTimestamp& ts) {
      frames.push_back(keys.frame_of(ts.id, 64));
      EXPECT_GE(ts.time.software_ns, before);
      EXPECT_LE(ts.time.software_ns, realtime_ns());
    });
    if (frames.size() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(frames, (std::vector<int64_t>{0, 1, 2}));
}

TEST(StreamTimestamps, OnlyTheFrameThatEndsAReadGetsItsStamp) {
  auto [c, s] = tcp_pair();
  ASSERT_TRUE(net::enable_timestamping(s.get(), false));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  uint8_t buf[kFrame * 4];
  size_t len = 0;
  struct Got {
    uint8_t first;
    net::KernelTime kt;
  };
  std::vector<Got> got;
  auto on_frame = [&](std::span<const uint8_t, kFrame> f, const net::KernelTime& kt) {
    got.push_back({f[0], kt});
    return true;
  };
  // Two frames 5 ms apart, read together: the stamp is the second's arrival, so only it has one.
  uint8_t a[kFrame] = {1}, b[kFrame] = {2};
  ASSERT_EQ(send(c.get(), a, kFrame, MSG_NOSIGNAL), static_cast<ssize_t>(kFrame));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const int64_t second_sent = realtime_ns();
  ASSERT_EQ(send(c.get(), b, kFrame, MSG_NOSIGNAL), static_cast<ssize_t>(kFrame));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(wait_readable(s.get()));
  EXPECT_TRUE(net::read_frames<kFrame>(s.get(), buf, sizeof buf, len, on_frame));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].first, 1);
  EXPECT_EQ(got[0].kt.software_ns, 0);
  EXPECT_EQ(got[1].first, 2);
  EXPECT_GE(got[1].kt.software_ns, second_sent);
  // Half a frame, then the rest: the frame ends the second read and takes its stamp.
  got.clear();
  uint8_t d[kFrame] = {3};
  ASSERT_EQ(send(c.get(), d, kFrame / 2, MSG_NOSIGNAL), static_cast<ssize_t>(kFrame / 2));
  ASSERT_TRUE(wait_readable(s.get()));
  EXPECT_TRUE(net::read_frames<kFrame>(s.get(), buf, sizeof buf, len, on_frame));
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(len, kFrame / 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const int64_t rest_sent = realtime_ns();
  ASSERT_EQ(send(c.get(), d + kFrame / 2, kFrame / 2, MSG_NOSIGNAL), static_cast<ssize_t>(kFrame / 2));
  ASSERT_TRUE(wait_readable(s.get()));
  EXPECT_TRUE(net::read_frames<kFrame>(s.get(), buf, sizeof buf, len, on_frame));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].first, 3);
  EXPECT_GE(got[0].kt.software_ns, rest_sent);
  // A read that fills the buffer may have left bytes behind: its stamp is not trusted.
  got.clear();
  len = 0;
  uint8_t many[kFrame * 5] = {};
  ASSERT_EQ(send(c.get(), many, sizeof many, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof many));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  size_t small_len = 0;
  uint8_t small[kFrame * 2];
  std::vector<net::KernelTime> stamps;
  EXPECT_TRUE(net::read_frames<kFrame>(s.get(), small, sizeof small, small_len,
                                       [&](std::span<const uint8_t, kFrame>, const net::KernelTime& kt) {
                                         stamps.push_back(kt);
                                         return true;
                                       }));
  ASSERT_EQ(stamps.size(), 5u);
  EXPECT_EQ(stamps[0].software_ns, 0);
  EXPECT_EQ(stamps[1].software_ns, 0);  // ended a full read: more was waiting
  EXPECT_EQ(stamps[3].software_ns, 0);
  EXPECT_GT(stamps[4].software_ns, 0);  // the last frame, read alone: the queue was empty after it
}
