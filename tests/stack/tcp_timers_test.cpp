// The TCP layer's timers and scale: the deadline heap against a brute-force model, poll()
// visiting only due connections, and 10,000 concurrent connections between two stacks in memory
// (held idle with no timer armed and no buffer allocated, then each used, then all closed),
// with the memory they cost printed for bench/stack_conns.sh.
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdio>
#include <map>
#include <random>
#include <vector>

#include "pipe_device.hpp"
#include "stack/socket.hpp"
#include "stack/tcp/deadline_heap.hpp"

using namespace weft;
using namespace weft::stack;

namespace {
struct Item {
  tcp::HeapSlot slot;
};
using Heap = tcp::DeadlineHeap<Item, &Item::slot>;
}  // namespace

TEST(TcpTimers, DeadlineHeapMatchesABruteForceModel) {
  std::mt19937_64 rng(11);
  std::vector<Item> items(300);
  std::vector<int64_t> model(items.size(), Heap::kNever);
  Heap h;
  for (int op = 0; op < 50000; ++op) {
    const size_t i = rng() % items.size();
    const int r = static_cast<int>(rng() % 10);
    if (r < 6) {
      const int64_t at = static_cast<int64_t>(rng() % 1000);
      h.set(&items[i], at);
      model[i] = at;
    } else if (r < 8) {
      h.remove(&items[i]);
      model[i] = Heap::kNever;
    } else if (r < 9) {
      h.set(&items[i], Heap::kNever);
      model[i] = Heap::kNever;
    } else if (Item* t = h.top(); t != nullptr) {  // pop the earliest, as poll() does
      const size_t k = static_cast<size_t>(t - items.data());
      ASSERT_EQ(model[k], *std::min_element(model.begin(), model.end()));
      h.remove(t);
      model[k] = Heap::kNever;
    }
    ASSERT_EQ(h.top_at(), *std::min_element(model.begin(), model.end())) << "op " << op;
    ASSERT_EQ(h.size(), static_cast<size_t>(std::count_if(model.begin(), model.end(),
                                                          [](int64_t x) { return x != Heap::kNever; })));
  }
}

namespace {
const wire::Ipv4Addr kA = wire::Ipv4Addr::of(10, 6, 0, 1);
const wire::Ipv4Addr kB = wire::Ipv4Addr::of(10, 6, 0, 2);

IfaceConfig cfg(wire::Ipv4Addr ip) {
  IfaceConfig c;
  c.ip = ip;
  c.secret0 = ip.v;
  c.secret1 = 3;
  return c;  // the library's default 256 KiB buffers: allocated only when used
}

struct Net {
  Net() {
    da.connect(&db);
    db.connect(&da);
    da.keep_sent = db.keep_sent = false;
  }
  void pump(int rounds = 100000) {
    for (int i = 0; i < rounds; ++i) {
      a.poll(1024);
      b.poll(1024);
      if (da.queue_.empty() && db.queue_.empty()) {
        const int64_t next = std::min(a.next_deadline(), b.next_deadline());
        if (next == INT64_MAX) return;
        clock.set(std::max(clock.now_ns(), next));
      }
    }
  }
  VirtualClock clock{1 * kSec};
  test::PipeDevice da{{{2, 0, 0, 0, 0, 0xa}}, false}, db{{{2, 0, 0, 0, 0, 0xb}}, false};
  Interface ia{da, clock, cfg(kA)}, ib{db, clock, cfg(kB)};
  Sockets a{ia}, b{ib};
};

long heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<long>(m.uordblks + m.hblkhd);
}
}  // namespace

TEST(TcpTimers, PollVisitsOnlyDueConnections) {
  Net n;
  auto l = n.b.listen(80, 2000);
  std::vector<SockId> cs;
  for (int i = 0; i < 1000; ++i) cs.push_back(n.a.connect(kB, 80).value());
  n.pump();
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(n.b.accept(*l));
  EXPECT_EQ(n.ia.tcp().timers_pending(), 0u);  // idle: no timer armed anywhere
  EXPECT_EQ(n.ib.tcp().timers_pending(), 0u);
  // One byte on one connection: b owes a delayed ACK, a has its RTO; nobody else has a timer.
  const uint8_t x = 1;
  ASSERT_TRUE(n.a.send(cs[500], wire::Bytes(&x, 1)));
  n.a.poll();
  n.b.poll();
  EXPECT_EQ(n.ib.tcp().timers_pending(), 1u);
  const uint64_t runs = n.ib.tcp().stats().timer_runs;
  n.clock.advance(41 * kMs);
  n.b.poll();
  EXPECT_EQ(n.ib.tcp().stats().timer_runs, runs + 1);  // the delayed ACK, and only it
  n.pump();
  EXPECT_EQ(n.ia.tcp().timers_pending(), 0u);
}

TEST(TcpTimers, TenThousandConnectionsHeldUsedAndClosed) {
  constexpr int kConns = 10000;
  Net n;
  auto l = n.b.listen(80, kConns);
  ASSERT_TRUE(l);
  // The first connection resolves ARP; the rest then go out as a burst of SYNs.
  std::vector<SockId> cs{n.a.connect(kB, 80).value()};
  n.pump();
  const long heap0 = heap_in_use();
  for (int i = 1; i < kConns; ++i) cs.push_back(n.a.connect(kB, 80).value());
  n.pump();
  std::vector<SockId> ss;
  for (SockResult<SockId> s; (s = n.b.accept(*l));) ss.push_back(*s);
  ASSERT_EQ(ss.size(), static_cast<size_t>(kConns));
  ASSERT_EQ(n.ia.tcp().connection_count(), static_cast<size_t>(kConns));
  EXPECT_EQ(n.ia.tcp().timers_pending() + n.ib.tcp().timers_pending(), 0u);
  size_t idle_bytes = 0;
  for (int i = 0; i < kConns; ++i) {
    ASSERT_EQ(n.a.connection(cs[i])->state(), tcp::State::established);
    idle_bytes += n.a.connection(cs[i])->memory() + n.b.connection(ss[i])->memory();
  }
  const long heap_idle = heap_in_use() - heap0;
  std::printf(
      "scale: %d idle connections each side: %zu B per connection (objects; rings not allocated), "
      "%ld B of heap per connection with both ends' tables, %.1f MiB for 10,000 (one side)\n",
      kConns, idle_bytes / (2 * kConns), heap_idle / (2 * kConns),
      static_cast<double>(heap_idle) / 2.0 / 1048576.0 * 10000 / kConns);
  EXPECT_LT(idle_bytes / (2 * kConns), 8192u);

  // Each connection carries one request and its answer.
  for (int i = 0; i < kConns; ++i) {
    const uint32_t v = static_cast<uint32_t>(i);
    ASSERT_EQ(n.a.send(cs[i], wire::Bytes(reinterpret_cast<const uint8_t*>(&v), 4)).value(), 4u);
  }
  n.pump();
  for (int i = 0; i < kConns; ++i) {
    uint32_t v = 0;
    ASSERT_EQ(n.b.recv(ss[i], wire::MutBytes(reinterpret_cast<uint8_t*>(&v), 4)).value(), 4u);
    ASSERT_EQ(v, static_cast<uint32_t>(i));
    v = ~v;
    ASSERT_EQ(n.b.send(ss[i], wire::Bytes(reinterpret_cast<const uint8_t*>(&v), 4)).value(), 4u);
  }
  n.pump();
  for (int i = 0; i < kConns; ++i) {
    uint32_t v = 0;
    ASSERT_EQ(n.a.recv(cs[i], wire::MutBytes(reinterpret_cast<uint8_t*>(&v), 4)).value(), 4u);
    ASSERT_EQ(v, ~static_cast<uint32_t>(i));
  }
  for (int i = 0; i < kConns; ++i) {
    n.a.close(cs[i]);
    n.b.close(ss[i]);
  }
  n.pump();  // through FIN exchange and TIME-WAIT (virtual time)
  EXPECT_EQ(n.ia.tcp().connection_count() + n.ib.tcp().connection_count(), 0u);
  EXPECT_EQ(n.a.open_sockets(), 0u);
}
