// The three ways to wait, private and shared CQs, and one thread serving CQs and a socket.
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <set>
#include <thread>

#include "guest_helpers.hpp"
#include "rdma/cq_poller.hpp"

using namespace wrd;

namespace {

// Waits for one completion on cq in the given mode (epoll through poller, which watches cq).
ibv_wc wait_mode(CompletionQueue& cq, WaitMode mode, CqPoller* poller) {
  if (mode != WaitMode::epoll) return wait_ok(cq, mode);
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  ibv_wc wc{};
  while (std::chrono::steady_clock::now() < deadline) {
    if (must(cq.poll({&wc, 1}), "poll") == 1) {
      must(check_completion(wc), "completion");
      return wc;
    }
    std::array<CqPoller::Ready, 4> ready;
    must(poller->wait(ready, 1000ms), "epoll wait");
  }
  throw std::runtime_error("no completion within 5 s (epoll)");
}

class WaitModes : public ::testing::TestWithParam<WaitMode> {};

}  // namespace

TEST_P(WaitModes, PingPongHundredMessages) {
  const WaitMode mode = GetParam();
  auto pd = must(ProtectionDomain::create(device()), "pd");
  std::shared_ptr<CompletionChannel> cha, chb;
  if (mode != WaitMode::busy) {
    cha = must(CompletionChannel::create(device()), "channel a");
    chb = must(CompletionChannel::create(device()), "channel b");
  }
  // One CQ per side for send and receive; each side's CQ has its own channel.
  auto cqa = must(CompletionQueue::create(device(), 64, cha), "cq a");
  auto cqb = must(CompletionQueue::create(device(), 64, chb), "cq b");
  auto qa = must(QueuePair::create(pd, cqa, cqa, QpOptions{}), "qp a");
  auto qb = must(QueuePair::create(pd, cqb, cqb, QpOptions{}), "qp b");
  auto ma = must(MemoryRegion::allocate(pd, 4096), "mr a");
  auto mb = must(MemoryRegion::allocate(pd, 4096), "mr b");
  auto o = connect_options();
  must(qa.connect(o, 1, address_of(qb, 2)), "a");
  must(qb.connect(o, 2, address_of(qa, 1)), "b");
  std::optional<CqPoller> poller;
  if (mode == WaitMode::epoll) {
    poller.emplace(must(CqPoller::create(), "poller"));
    must(poller->watch(cqa, 1), "watch a");
  }
  // b echoes from its own thread, so a blocked wait really blocks and is woken by the channel.
  std::string echo_error;
  std::jthread echo([&] {
    try {
      for (int i = 0; i < 100; ++i) {
        auto r = RecvWr::into(mb.local(0, 64), 1);
        must(qb.post_recv(r), "b recv");
        ibv_wc wc;
        do wc = wait_mode(cqb, mode == WaitMode::epoll ? WaitMode::channel : mode, nullptr);
        while (wc.opcode != IBV_WC_RECV);
        auto s = SendWr::send(mb.local(0, wc.byte_len), 2);
        must(qb.post_send(s), "b send");
      }
    } catch (const std::exception& e) {
      echo_error = e.what();
    }
  });
  // Give b time to post its first receive (RNR retries would also cover it).
  std::this_thread::sleep_for(20ms);
  for (int i = 0; i < 100; ++i) {
    auto r = RecvWr::into(ma.local(1024, 64), 3);
    must(qa.post_recv(r), "a recv");
    std::snprintf(reinterpret_cast<char*>(ma.data()), 64, "ping %d", i);
    auto s = SendWr::send(ma.local(0, 32), 4);
    must(qa.post_send(s), "a send");
    int got_recv = 0, got_send = 0;
    while (!got_recv || !got_send) {
      ibv_wc wc = wait_mode(cqa, mode, poller ? &*poller : nullptr);
      (wc.opcode == IBV_WC_RECV ? got_recv : got_send)++;
    }
    ASSERT_STREQ(reinterpret_cast<char*>(ma.data()) + 1024, reinterpret_cast<char*>(ma.data()));
  }
  echo.join();
  EXPECT_EQ(echo_error, "");
}

INSTANTIATE_TEST_SUITE_P(Rdma, WaitModes,
                         ::testing::Values(WaitMode::busy, WaitMode::channel, WaitMode::epoll),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST(CompletionQueues, SharedByManyQps) {
  auto pd = must(ProtectionDomain::create(device()), "pd");
  auto shared = must(CompletionQueue::create(device(), 256), "shared cq");
  auto peer_cq = must(CompletionQueue::create(device(), 256), "peer cq");
  auto mr = must(MemoryRegion::allocate(pd, 4096), "mr");
  auto o = connect_options();
  std::vector<QueuePair> mine, peers;
  for (int i = 0; i < 3; ++i) {
    mine.push_back(must(QueuePair::create(pd, shared, shared, QpOptions{}), "qp"));
    peers.push_back(must(QueuePair::create(pd, peer_cq, peer_cq, QpOptions{}), "peer qp"));
    must(mine[i].connect(o, 10, address_of(peers[i], 20)), "mine");
    must(peers[i].connect(o, 20, address_of(mine[i], 10)), "peer");
  }
  for (int i = 0; i < 3; ++i) {
    auto w = SendWr::write(mr.local(0, 8), mr.remote(1024 + i * 8, 8), 100 + i);
    must(mine[i].post_send(w), "write");
  }
  std::set<uint32_t> qps;
  std::set<uint64_t> ids;
  for (int i = 0; i < 3; ++i) {
    ibv_wc wc = wait_ok(shared);
    qps.insert(wc.qp_num);
    ids.insert(wc.wr_id);
  }
  EXPECT_EQ(qps.size(), 3u);
  EXPECT_EQ(ids, (std::set<uint64_t>{100, 101, 102}));
}

TEST(CompletionQueues, PollerServesCqsAndAnEventfd) {
  auto pd = must(ProtectionDomain::create(device()), "pd");
  auto ch = must(CompletionChannel::create(device()), "channel");  // one channel for both CQs
  Side a = make_side(pd, QpOptions{}, 4096, ch);
  Side b = make_side(pd, QpOptions{}, 4096, ch);
  connect_pair(a, b);
  auto poller = must(CqPoller::create(), "poller");
  must(poller.watch(a.scq, 11), "watch a send");
  must(poller.watch(b.rcq, 22), "watch b recv");
  int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  must(poller.watch_fd(efd, 33), "watch eventfd");
  std::array<CqPoller::Ready, 8> ready;
  // Nothing happened yet: the timeout is honoured.
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(must(poller.wait(ready, 100ms), "idle wait"), 0);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 90ms);
  // The eventfd alone.
  uint64_t one = 1;
  ASSERT_EQ(write(efd, &one, 8), 8);
  int n = must(poller.wait(ready, 1000ms), "fd wait");
  ASSERT_EQ(n, 1);
  EXPECT_EQ(ready[0].kind, CqPoller::Ready::Kind::fd);
  EXPECT_EQ(ready[0].tag, 33u);
  ASSERT_EQ(read(efd, &one, 8), 8);
  // A SEND: both CQs fire, reported by tag.
  auto r = RecvWr::into(b.mr.local(0, 64), 1);
  must(b.qp.post_recv(r), "recv");
  auto s = SendWr::send(a.mr.local(0, 10), 2);
  must(a.qp.post_send(s), "send");
  std::set<uint64_t> tags;
  for (int tries = 0; tries < 20 && tags.size() < 2; ++tries) {
    n = must(poller.wait(ready, 1000ms), "cq wait");
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(ready[i].kind, CqPoller::Ready::Kind::cq);
      tags.insert(ready[i].tag);
    }
  }
  EXPECT_EQ(tags, (std::set<uint64_t>{11, 22}));
  ibv_wc wc;
  EXPECT_EQ(must(a.scq.poll({&wc, 1}), "poll a"), 1);
  EXPECT_EQ(must(b.rcq.poll({&wc, 1}), "poll b"), 1);
  must(poller.unwatch(a.scq), "unwatch");
  must(poller.unwatch_fd(efd), "unwatch fd");
  close(efd);
}

TEST(CompletionQueues, ChannelWaitTimesOut) {
  auto ch = must(CompletionChannel::create(device()), "channel");
  auto cq = must(CompletionQueue::create(device(), 16, ch), "cq");
  ibv_wc wc;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(must(cq.wait({&wc, 1}, WaitMode::channel, 100ms), "wait"), 0);
  EXPECT_EQ(must(cq.wait({&wc, 1}, WaitMode::busy, 100ms), "wait"), 0);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 190ms);
  auto no_channel = must(CompletionQueue::create(device(), 16), "cq");
  EXPECT_FALSE(no_channel.wait({&wc, 1}, WaitMode::channel, 10ms));
}
