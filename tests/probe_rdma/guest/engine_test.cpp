// RDMA probe engine on a real verbs device (rxe in the Soft-RoCE guest; see ../guest_suite.sh).
// Device and address come from WRP_DEVICE / WRP_IP (default rxe0, 10.9.0.1).
#include "probe/rdma/engine.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "probe/rdma/recv_ring.hpp"
#include "probe/rdma/wire.hpp"
#include "rdma/address_handle.hpp"
#include "rdma/completion_queue.hpp"
#include "rdma/device.hpp"
#include "rdma/memory_region.hpp"
#include "rdma/protection_domain.hpp"
#include "rdma/queue_pair.hpp"

using namespace weft;
using namespace weft::probe;
using namespace std::chrono_literals;

namespace {

std::string env_or(const char* name, const char* def) {
  const char* v = std::getenv(name);
  return v && *v ? v : def;
}

RdmaEngineConfig base_config() {
  RdmaEngineConfig c;
  c.device = env_or("WRP_DEVICE", "rxe0");
  c.address = env_or("WRP_IP", "10.9.0.1");
  c.recv_depth = 4096;
  c.send_depth = 1024;
  c.interval = 10ms;
  c.timeout = 2s;
  c.followup_grace = 1s;  // a loaded emulated guest can be slow to send them; none should be missed
  c.window = 3600s;
  return c;
}

RdmaTarget target_of(const RdmaEngine& e, const std::string& name) {
  RdmaTarget t;
  t.name = name;
  t.gid = e.address().gid;
  t.qpn = e.address().qpn;
  t.qkey = e.address().qkey;
  return t;
}

// Runs an engine on its own thread, collecting resolved probes and windows.
struct Running {
  std::unique_ptr<RdmaEngine> engine;
  std::thread thread;
  Status status;
  std::mutex mu;
  std::map<std::string, std::vector<RdmaProbeResult>> probes;
  std::vector<WindowStats> windows;
  std::atomic<uint64_t> resolved{0};

  explicit Running(std::unique_ptr<RdmaEngine> e) : engine(std::move(e)) {
    engine->set_on_probe([this](const RdmaProbeResult& r) {
      std::lock_guard lk(mu);
      probes[std::string(r.target)].push_back(r);
      ++resolved;
    });
  }
  void start() {
    thread = std::thread([this] {
      status = engine->run([this](WindowStats&& w) {
        std::lock_guard lk(mu);
        windows.push_back(std::move(w));
      });
    });
  }
  void stop() {
    if (!thread.joinable()) return;
    engine->stop();
    thread.join();
    ASSERT_TRUE(status) << status.error().message;
  }
  ~Running() {
    if (thread.joinable()) {
      engine->stop();
      thread.join();
    }
  }
  bool wait_resolved(uint64_t n, std::chrono::seconds limit) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (resolved.load() < n && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(10ms);
    return resolved.load() >= n;
  }
};

std::unique_ptr<Running> make(const RdmaEngineConfig& c) {
  auto e = RdmaEngine::create(c);
  EXPECT_TRUE(e) << (e ? "" : e.error().message);
  if (!e) return nullptr;
  return std::make_unique<Running>(std::move(*e));
}

}  // namespace

TEST(RdmaEngineGuest, TwoEnginesProbeEachOtherWithZeroLoss) {
  auto c = base_config();
  c.count = 200;
  auto a = make(c), b = make(c);
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->engine->address().qpn, b->engine->address().qpn);
  EXPECT_EQ(a->engine->timestamp_source(), TimestampSource::user);  // rxe has no NIC clock
  EXPECT_FALSE(a->engine->timestamp_note().empty());
  a->engine->set_targets({target_of(*b->engine, "b")});
  b->engine->set_targets({target_of(*a->engine, "a")});
  a->start();
  b->start();
  EXPECT_TRUE(a->wait_resolved(200, 30s));
  EXPECT_TRUE(b->wait_resolved(200, 30s));
  a->stop();
  b->stop();
  for (auto* r : {a.get(), b.get()}) {
    auto cnt = r->engine->counters();
    EXPECT_EQ(cnt.sent, 200u);
    EXPECT_EQ(cnt.received, 200u);
    EXPECT_EQ(cnt.lost, 0u);
    EXPECT_EQ(cnt.garbage, 0u);
    EXPECT_EQ(cnt.pings_received, 200u);
    EXPECT_EQ(cnt.followups_sent, 200u);
    EXPECT_EQ(cnt.recv_posted, cnt.recv_ring);  // every buffer is back on the queue
    EXPECT_EQ(cnt.recv_ring, kRecvFloor);       // one peer: the floor, not the capacity
    ASSERT_EQ(r->windows.size(), 1u);
    const WindowStats& w = r->windows[0];
    EXPECT_EQ(w.protocol, Protocol::rdma);
    EXPECT_EQ(w.sent, 200u);
    EXPECT_EQ(w.received, 200u);
    EXPECT_EQ(w.lost, 0u);
    EXPECT_EQ(w.timestamp_source, TimestampSource::user);
    // Every answered probe had its follow-up: network RTT and responder delay for (nearly) all.
    EXPECT_EQ(w.network_rtt.count + w.weird, 200u);
    EXPECT_GT(w.network_rtt.p50_ns, 0);
    EXPECT_GT(w.responder_delay.count, 0u);
    EXPECT_EQ(w.weird, 0u);  // software stamps: posted/polled times cannot contradict each other
    for (auto& [name, list] : r->probes)
      for (auto& p : list) {
        EXPECT_TRUE(p.answered);
        if (p.sample.has_network) {
          EXPECT_EQ(p.sample.network_ns + p.sample.responder_delay_ns, p.sample.total_ns);
          EXPECT_GE(p.sample.network_ns, 0);
        }
      }
    std::printf("[rtt] p50 total %.1f us network %.1f us responder %.1f us weird %lu\n",
                w.rtt_incl_responder_delay.p50_ns / 1e3, w.network_rtt.p50_ns / 1e3,
                w.responder_delay.p50_ns / 1e3, (unsigned long)w.weird);
  }
}

TEST(RdmaEngineGuest, BurstOfTenThousandPingsFromManyPeersLosesNone) {
  auto rc = base_config();
  rc.recv_depth = 16384;
  // Five peers may each post 1,024 PINGs (half their send queue) at once: more than any ring sized
  // per peer, so this responder posts its whole capacity from the start (with the floor of 512 it
  // lost half the burst at the device while it slept).
  rc.recv_initial = 16384;
  auto responder = make(rc);
  ASSERT_TRUE(responder);
  constexpr int kPeers = 5;
  constexpr uint64_t kEach = 2000;
  std::vector<std::unique_ptr<Running>> peers;
  for (int i = 0; i < kPeers; ++i) {
    auto c = base_config();
    c.interval = 1us;  // as fast as the send queue allows
    c.count = kEach;
    c.timeout = 20s;
    c.recv_depth = 4096;
    c.respond = false;
    peers.push_back(make(c));
    ASSERT_TRUE(peers.back());
    peers.back()->engine->set_targets({target_of(*responder->engine, "responder")});
  }
  responder->start();
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& p : peers) p->start();
  for (auto& p : peers) EXPECT_TRUE(p->wait_resolved(kEach, 120s));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (auto& p : peers) p->stop();
  responder->stop();
  auto rcnt = responder->engine->counters();
  EXPECT_EQ(rcnt.pings_received, kPeers * kEach);
  EXPECT_EQ(rcnt.responder_drops, 0u);
  EXPECT_EQ(rcnt.pongs_sent, kPeers * kEach);
  for (auto& p : peers) {
    auto c = p->engine->counters();
    EXPECT_EQ(c.sent, kEach);
    EXPECT_EQ(c.received, kEach);
    EXPECT_EQ(c.lost, 0u);
  }
  EXPECT_EQ(rcnt.recv_posted, rcnt.recv_ring);
  std::printf(
      "[burst] %lu pings from %d peers answered in %.2f s (%.0f pings/s with PONG and follow-up each), "
      "responder receive ring %lu buffers\n",
      (unsigned long)rcnt.pings_received, kPeers, secs, static_cast<double>(rcnt.pings_received) / secs,
      (unsigned long)rcnt.recv_ring);
}

// The receive ring follows the targets: 100 targets (all one responder under 100 names) need
// more than the floor, and every probe to each is answered.
TEST(RdmaEngineGuest, ReceiveRingGrowsWithTargets) {
  auto rc = base_config();
  auto responder = make(rc);
  auto c = base_config();
  c.respond = false;
  c.count = 3;
  c.interval = 50ms;
  c.timeout = 1s;
  c.recv_depth = 16384;
  auto prober = make(c);
  ASSERT_TRUE(responder && prober);
  EXPECT_EQ(prober->engine->counters().recv_ring, kRecvFloor);
  std::vector<RdmaTarget> list;
  for (int i = 0; i < 100; ++i) list.push_back(target_of(*responder->engine, "t" + std::to_string(i)));
  prober->engine->set_targets(list);
  responder->start();
  prober->start();
  EXPECT_TRUE(prober->wait_resolved(300, 60s));
  prober->stop();
  responder->stop();
  auto pc = prober->engine->counters();
  EXPECT_EQ(pc.received, 300u);
  EXPECT_EQ(pc.lost, 0u);
  // 100 targets x 2 answers x 21 probes within the timeout: 4,200 -> 4,352 buffers.
  EXPECT_EQ(pc.recv_ring,
            recv_ring_for_peers(100, recv_per_target(50'000'000, 1'000'000'000, 16384), 0, 16384));
  EXPECT_GT(pc.recv_ring, kRecvFloor);
  EXPECT_EQ(pc.recv_posted, pc.recv_ring);
}

TEST(RdmaEngineGuest, StoppedResponderIsFullLossWhileOthersAreStillProbed) {
  auto c = base_config();
  c.respond = false;
  c.count = 150;
  c.timeout = 500ms;
  auto prober = make(c);
  auto rc = base_config();
  auto alive = make(rc), doomed = make(rc);
  ASSERT_TRUE(prober && alive && doomed);
  prober->engine->set_targets({target_of(*alive->engine, "alive"), target_of(*doomed->engine, "doomed")});
  alive->start();
  doomed->start();
  prober->start();
  EXPECT_TRUE(prober->wait_resolved(40, 30s));
  doomed->stop();
  doomed.reset();  // its QP is gone: datagrams to it are dropped
  EXPECT_TRUE(prober->wait_resolved(300, 60s));
  prober->stop();
  alive->stop();
  std::lock_guard lk(prober->mu);
  auto& ok = prober->probes["alive"];
  auto& gone = prober->probes["doomed"];
  ASSERT_EQ(ok.size(), 150u);
  ASSERT_EQ(gone.size(), 150u);
  for (auto& r : ok) EXPECT_TRUE(r.answered) << "seq " << r.seq;
  size_t answered_before = 0;
  while (answered_before < gone.size() && gone[answered_before].answered) ++answered_before;
  EXPECT_GE(answered_before, 5u);
  // Once it stopped, nothing more came back: the rest is 100% loss.
  for (size_t i = answered_before; i < gone.size(); ++i) EXPECT_FALSE(gone[i].answered) << "probe " << i;
  EXPECT_GE(gone.size() - answered_before, 60u);
  std::printf("[stop] doomed answered %zu then lost %zu; alive answered %zu/%zu\n", answered_before,
              gone.size() - answered_before, ok.size(), ok.size());
}

TEST(RdmaEngineGuest, GarbageDatagramsAreCountedAndDroppedWhileProbingGoesOn) {
  auto rc = base_config();
  auto responder = make(rc);
  auto c = base_config();
  c.respond = false;
  c.count = 100;
  auto prober = make(c);
  ASSERT_TRUE(responder && prober);
  prober->engine->set_targets({target_of(*responder->engine, "r")});
  responder->start();
  prober->start();

  // A plain UD QP sends garbage to the responder's QP while the prober runs.
  auto dev = rdma::Device::open(rc.device);
  ASSERT_TRUE(dev) << dev.error().message;
  auto pd = rdma::ProtectionDomain::create(*dev);
  ASSERT_TRUE(pd);
  auto cq = rdma::CompletionQueue::create(*dev, 256);
  ASSERT_TRUE(cq);
  rdma::QpOptions qo;
  qo.type = rdma::QpType::ud;
  qo.max_send_wr = 128;
  auto qp = rdma::QueuePair::create(*pd, *cq, *cq, qo);
  ASSERT_TRUE(qp) << qp.error().message;
  rdma::ConnectOptions co;
  co.gid_index = responder->engine->address().gid_index;
  co.qkey = responder->engine->address().qkey;
  ASSERT_TRUE(qp->connect(co, 0, {}));
  auto ah = rdma::AddressHandle::create(*pd, co, responder->engine->address().gid);
  ASSERT_TRUE(ah) << ah.error().message;
  auto mr = rdma::MemoryRegion::allocate(*pd, 4096, rdma::access::local);
  ASSERT_TRUE(mr);
  // Garbage of every kind: empty, short, right size with a bad magic, a valid PONG of nobody's
  // session (counted as unknown, not garbage), a PING with a bad version, and a large datagram.
  uint8_t* b = reinterpret_cast<uint8_t*>(mr->data());
  for (int i = 0; i < 4096; ++i) b[i] = static_cast<uint8_t>(i * 7 + 3);
  struct G {
    size_t off, len;
  };
  std::vector<G> kinds = {{0, 0}, {0, 10}, {100, 64}, {200, 63}, {300, 65}, {1024, 900}};
  rdma_wire::Message bad_version;
  bad_version.type = rdma_wire::Type::ping;
  bad_version.flags = rdma_wire::kGlobal;
  bad_version.session = bad_version.seq = 5;
  bad_version.gid[15] = 1;
  rdma_wire::encode(bad_version, std::span<uint8_t, 64>(b + 2048, 64));
  b[2048 + 4] = 9;
  kinds.push_back({2048, 64});
  constexpr int kRounds = 20;
  int sent = 0;
  for (int r = 0; r < kRounds; ++r) {
    for (auto& k : kinds) {
      auto wr = rdma::SendWr::send(mr->local(k.off, k.len), static_cast<uint64_t>(sent))
                    .to(ah->raw(), responder->engine->address().qpn, responder->engine->address().qkey);
      ASSERT_TRUE(qp->post_send(wr));
      ibv_wc wc[4];
      auto n = cq->wait(wc, rdma::WaitMode::busy, 2000ms);
      ASSERT_TRUE(n && *n == 1);
      ASSERT_EQ(wc[0].status, IBV_WC_SUCCESS);
      ++sent;
    }
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(prober->wait_resolved(100, 30s));
  prober->stop();
  // Let the responder take what is still queued.
  std::this_thread::sleep_for(200ms);
  responder->stop();
  auto rcnt = responder->engine->counters();
  EXPECT_EQ(rcnt.garbage, static_cast<uint64_t>(sent));
  EXPECT_EQ(rcnt.recv_errors, 0u);
  EXPECT_EQ(rcnt.pings_received, 100u);
  EXPECT_EQ(rcnt.recv_posted, rcnt.recv_ring);
  auto pc = prober->engine->counters();
  EXPECT_EQ(pc.received, 100u);
  EXPECT_EQ(pc.lost, 0u);
  std::printf("[garbage] %d datagrams counted and dropped, probing: %lu/%lu answered\n", sent,
              (unsigned long)pc.received, (unsigned long)pc.sent);
}

TEST(RdmaEngineGuest, TrafficClassAndServiceLevelAreAccepted) {
  auto c = base_config();
  c.traffic_class = 106;  // the seed's RoCE traffic class (DSCP 26, ECN 2)
  c.sl = 3;
  c.count = 20;
  auto a = make(c);
  ASSERT_TRUE(a);
  a->engine->set_targets({target_of(*a->engine, "self")});  // an engine answers its own pings
  a->start();
  EXPECT_TRUE(a->wait_resolved(20, 30s));
  a->stop();
  EXPECT_EQ(a->engine->counters().received, 20u);
}

// Used by ../guest_suite.sh for the netem check, not on its own: probes from WRP_PAIR_DEV_A
// (WRP_PAIR_IP_A) to a responder on WRP_PAIR_DEV_B (WRP_PAIR_IP_B) every 20 ms while the delay
// is switched off and on (shell commands WRP_PAIR_OFF / WRP_PAIR_ON) in alternating phases, so
// that the host's changing load hits both conditions alike; prints the p50s of each condition as
// PAIR_* lines. Probes sent just after a switch are left out (they may have met both).
// Skipped when WRP_PAIR_DEV_A is not set.
TEST(RdmaEngineGuest, PairAcrossTwoDevices) {
  if (!std::getenv("WRP_PAIR_DEV_A")) GTEST_SKIP() << "set by guest_suite.sh only";
  auto rc = base_config();
  rc.device = env_or("WRP_PAIR_DEV_B", "");
  rc.address = env_or("WRP_PAIR_IP_B", "");
  auto responder = make(rc);
  auto c = base_config();
  c.device = env_or("WRP_PAIR_DEV_A", "");
  c.address = env_or("WRP_PAIR_IP_A", "");
  c.respond = false;
  c.interval = 20ms;
  c.timeout = 1s;
  auto prober = make(c);
  ASSERT_TRUE(responder && prober);
  prober->engine->set_targets({target_of(*responder->engine, "b")});
  responder->start();
  prober->start();
  const std::string off = env_or("WRP_PAIR_OFF", "true"), on = env_or("WRP_PAIR_ON", "true");
  const int phases = std::atoi(env_or("WRP_PAIR_PHASES", "10").c_str());
  struct Phase {
    bool delayed;
    uint64_t first_seq, last_seq;
  };
  std::vector<Phase> plan;
  for (int p = 0; p < phases; ++p) {
    const bool delayed = p % 2 == 1;
    ASSERT_EQ(std::system((delayed ? on : off).c_str()), 0) << (delayed ? on : off);
    const uint64_t first = prober->engine->counters().sent + 4;  // skip what may straddle the switch
    std::this_thread::sleep_for(700ms);
    plan.push_back({delayed, first, prober->engine->counters().sent});
  }
  ASSERT_EQ(std::system(off.c_str()), 0);
  std::this_thread::sleep_for(1500ms);  // let the last probes resolve
  prober->stop();
  responder->stop();
  std::vector<int64_t> net[2], delay[2];
  uint64_t answered[2] = {0, 0}, total[2] = {0, 0};
  {
    std::lock_guard lk(prober->mu);
    for (auto& r : prober->probes["b"])
      for (auto& ph : plan)
        if (r.seq >= ph.first_seq && r.seq <= ph.last_seq) {
          ++total[ph.delayed];
          if (!r.answered) continue;
          ++answered[ph.delayed];
          if (r.sample.has_network) net[ph.delayed].push_back(r.sample.network_ns);
          if (r.sample.has_responder_delay) delay[ph.delayed].push_back(r.sample.responder_delay_ns);
        }
  }
  auto p50 = [](std::vector<int64_t> v) -> long {
    if (v.empty()) return -1;
    std::sort(v.begin(), v.end());
    return static_cast<long>(v[v.size() / 2]);
  };
  auto mn = [](const std::vector<int64_t>& v) -> long {
    return v.empty() ? -1 : *std::min_element(v.begin(), v.end());
  };
  EXPECT_EQ(answered[0], total[0]);
  EXPECT_EQ(answered[1], total[1]);
  EXPECT_GE(net[0].size(), 50u);
  EXPECT_GE(net[1].size(), 50u);
  std::printf("PAIR_SAMPLES_OFF=%zu\nPAIR_SAMPLES_ON=%zu\nPAIR_LOST=%lu\n", net[0].size(), net[1].size(),
              (unsigned long)(total[0] + total[1] - answered[0] - answered[1]));
  std::printf(
      "PAIR_P50_NETWORK_OFF_NS=%ld\nPAIR_P50_NETWORK_ON_NS=%ld\nPAIR_MIN_NETWORK_OFF_NS=%ld\n"
      "PAIR_MIN_NETWORK_ON_NS=%ld\nPAIR_P50_DELAY_OFF_NS=%ld\nPAIR_P50_DELAY_ON_NS=%ld\n",
      p50(net[0]), p50(net[1]), mn(net[0]), mn(net[1]), p50(delay[0]), p50(delay[1]));
}
