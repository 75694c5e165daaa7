#pragma once
// The RDMA probe engine's state (RdmaEngine::Impl), shared by the files that implement it: set-up
// (engine_setup.cpp: device, queue pair, buffers, targets and schedule), the datapath
// (engine_datapath.cpp: posting sends, completions, answering PINGs, resolving probes) and the
// loop (engine_loop.cpp: when to send, sleep or spin). The helpers every probe passes through
// (posting one message, a receive buffer's address) are defined here, in the class, so that each
// of those files inlines them, as the IP prober's ip/prober_impl.hpp does. Private to
// src/probe/rdma: the public interface is probe/rdma/engine.hpp.
//
// One thread: post the PINGs that are due, drain the CQ in batches
// (receives: PINGs to answer, PONGs and follow-ups to match, garbage to count; sends: stamps of
// our PINGs, PONGs whose completion triggers the follow-up), re-post every receive buffer at once,
// resolve probes and fold them into windows, then sleep on the CQ's channel until the next due
// time. Nothing on the per-packet path allocates: buffers, rings and tables are made up front;
// only the first PING from a new peer creates its address handle.
#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.hpp"
#include "base/random.hpp"
#include "net/epoll.hpp"
#include "probe/rdma/engine.hpp"
#include "probe/rdma/in_flight.hpp"
#include "probe/rdma/recv_ring.hpp"
#include "probe/rdma/rtt.hpp"
#include "probe/rdma/windows.hpp"
#include "probe/rdma/wire.hpp"
#include "rdma/address_handle.hpp"
#include "rdma/completion_channel.hpp"
#include "rdma/device.hpp"
#include "rdma/extended_cq.hpp"
#include "rdma/memory_region.hpp"
#include "rdma/protection_domain.hpp"
#include "rdma/queue_pair.hpp"
#include "rdma/work_request.hpp"

namespace weft::probe {

// The engine's files say w::Message for the RDMA probe's wire format (this header is theirs alone).
namespace w = rdma_wire;

struct RdmaEngine::Impl {
  static constexpr uint64_t kRecvBit = 1ull << 63;
  static constexpr size_t kPollBatch = 256;
  static constexpr uint32_t kMsgSlot = 64;  // bytes per send buffer
  static_assert(w::kSize <= kMsgSlot);
  static constexpr int64_t kMaxSleepNs = 2'000'000;  // timeouts and windows are checked at least this often

  enum class SendKind : uint8_t { ping, pong, followup };

  struct SendCtx {
    SendKind kind = SendKind::ping;
    uint64_t session = 0, seq = 0;
    ibv_ah* ah = nullptr;
    uint32_t qpn = 0, qkey = 0;
    CompletionStamp ping_rx;  // pong: when the PING it answers was received
    int64_t post_mono = 0;    // when it was posted (the software send time)
  };

  struct PongReq {
    ibv_ah* ah = nullptr;
    uint32_t qpn = 0, qkey = 0;
    uint64_t session = 0, seq = 0;
    CompletionStamp ping_rx;
  };

  struct PeerKey {
    std::array<uint8_t, 16> gid{};
    uint16_t lid = 0;
    bool global = false;
    bool operator==(const PeerKey&) const = default;
  };
  struct PeerHash {
    size_t operator()(const PeerKey& k) const {
      uint64_t a, b;
      std::memcpy(&a, k.gid.data(), 8);
      std::memcpy(&b, k.gid.data() + 8, 8);
      return std::hash<uint64_t>()(a * 0x9e3779b97f4a7c15ull ^ b ^ (uint64_t{k.lid} << 1) ^ k.global);
    }
  };

  struct TargetState {
    RdmaTarget target;
    std::string addr_text;
    std::optional<rdma::AddressHandle> ah;
    uint32_t gen = 0;
    bool retired = false;
    int64_t phase_mono = 0;
    uint64_t k = 0;  // the k-th send is due at phase + k * interval
    uint64_t sends = 0;
    RdmaWindows windows;
  };

  static std::string gid_text(const ibv_gid& g) {
    char buf[INET6_ADDRSTRLEN] = {};
    inet_ntop(AF_INET6, g.raw, buf, sizeof buf);
    return buf;
  }

  static std::string target_text(const RdmaTarget& t) {
    return fmt::format("{} qpn {}", t.global ? gid_text(t.gid) : fmt::format("lid {}", t.lid), t.qpn);
  }

  static bool same_target(const RdmaTarget& a, const RdmaTarget& b) {
    return a.name == b.name && a.global == b.global && std::memcmp(a.gid.raw, b.gid.raw, 16) == 0 &&
           a.lid == b.lid && a.qpn == b.qpn && a.qkey == b.qkey;
  }

  static CompletionStamp stamp_of(const rdma::WorkCompletion& c) { return {c.nic_ticks, c.poll_mono_ns}; }

  static void inc(std::atomic<uint64_t>& c, uint64_t n = 1) {
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }

  RdmaEngineConfig cfg;
  RdmaAddress addr;
  StampChoice clock;
  rdma::Device dev;
  rdma::ProtectionDomain pd;
  std::shared_ptr<rdma::CompletionChannel> channel;
  rdma::ExtendedCq cq;
  rdma::QueuePair qp;
  rdma::MemoryRegion mr;  // the send buffers
  rdma::ConnectOptions opts;

  uint32_t send_depth = 0, recv_slot = 0;

  // Receive side: recv_ring buffers of recv_slot bytes, kRecvChunk to a registered chunk, all
  // posted; the QP holds up to recv_capacity (see recv_ring.hpp for how the ring is sized).
  std::vector<rdma::MemoryRegion> recv_chunks;
  uint32_t recv_ring = 0, recv_capacity = 0;
  size_t recv_taken = 0;  // receive completions in the current drain()
  std::vector<rdma::RecvWr> reposts;
  // Send ring: slots are used in post order and complete in that order (one QP, all signalled).
  std::vector<SendCtx> sends;
  std::vector<rdma::SendWr> batch;  // built this turn, posted by flush_sends()
  uint64_t head = 0, tail = 0;      // posted (incl. batch) / completed
  // PONGs waiting for send-queue room.
  std::vector<PongReq> backlog;
  uint64_t bl_head = 0, bl_tail = 0;
  std::unordered_map<PeerKey, rdma::AddressHandle, PeerHash> peers;

  std::vector<std::unique_ptr<TargetState>> targets;
  uint32_t next_gen = 1;
  std::mutex targets_mu;
  std::optional<std::vector<RdmaTarget>> new_targets;
  std::optional<RdmaSchedule> new_schedule;

  uint64_t session = 0, next_seq = 0;
  std::optional<RdmaInFlight> in_flight;
  std::vector<rdma::WorkCompletion> completions;
  std::function<void(const RdmaProbeResult&)> on_probe;
  std::function<void(const RdmaTarget&, const std::string&)> on_skipped;
  std::function<void(WindowStats&&)> on_window;

  std::atomic<bool> stopping{false};
  EventFd wake;  // set_targets(), set_schedule() and stop() wake a sleeping run()
  Rng rng;

  struct {
    std::atomic<uint64_t> sent{0}, received{0}, lost{0}, late{0}, duplicate{0}, evicted{0}, weird{0},
        garbage{0}, unknown_session{0}, unknown_probe{0}, send_errors{0}, recv_errors{0}, pings_received{0},
        pongs_sent{0}, followups_sent{0}, responder_drops{0}, recv_posted{0}, recv_ring{0};
  } c;

  Impl(RdmaEngineConfig config, rdma::Device d, rdma::ProtectionDomain p,
       std::shared_ptr<rdma::CompletionChannel> ch, rdma::ExtendedCq q, rdma::QueuePair qpair,
       rdma::MemoryRegion m, EventFd wake)
      : cfg(std::move(config)),
        dev(std::move(d)),
        pd(std::move(p)),
        channel(std::move(ch)),
        cq(std::move(q)),
        qp(std::move(qpair)),
        mr(std::move(m)),
        wake(std::move(wake)) {}

  size_t outstanding() const { return head - tail; }

  // --- receive buffers -------------------------------------------------------------------
  void queue_repost(uint32_t i) {
    const auto& chunk = recv_chunks[i / kRecvChunk];
    reposts.push_back(
        rdma::RecvWr::into(chunk.local(size_t{i % kRecvChunk} * recv_slot, recv_slot), kRecvBit | i));
  }
  const uint8_t* recv_buf(uint32_t i) const {
    return reinterpret_cast<const uint8_t*>(recv_chunks[i / kRecvChunk].data() +
                                            size_t{i % kRecvChunk} * recv_slot);
  }
  size_t active_targets = 0;
  uint32_t ring_for_peers() const {
    return recv_ring_for_peers(active_targets,
                               recv_per_target(cfg.interval.count(), cfg.timeout.count(), recv_capacity),
                               peers.size(), recv_capacity);
  }
  // Registers and posts buffers until the ring holds `want` (at most recv_capacity). A chunk that
  // cannot be registered stops the growth for good (logged once): the ring keeps what it has.
  Status grow_recv(uint32_t want);
  Status flush_reposts();

  // --- sends -----------------------------------------------------------------------------
  bool post(SendKind kind, const w::Message& m, ibv_ah* ah, uint32_t qpn, uint32_t qkey,
            const CompletionStamp& ping_rx = {}) {
    if (outstanding() >= send_depth) return false;
    const uint32_t i = static_cast<uint32_t>(head % send_depth);
    ++head;
    const size_t off = size_t{i} * kMsgSlot;
    w::encode(m, std::span<uint8_t, w::kSize>(reinterpret_cast<uint8_t*>(mr.data() + off), w::kSize));
    sends[i] = SendCtx{kind, m.session, m.seq, ah, qpn, qkey, ping_rx, 0};
    batch.push_back(rdma::SendWr::send(mr.local(off, w::kSize), i).to(ah, qpn, qkey));
    return true;
  }

  void flush_sends();

  // --- responder -------------------------------------------------------------------------
  ibv_ah* peer_ah(const w::Message& m);

  bool post_pong(const PongReq& r) {
    w::Message m;
    m.type = w::Type::pong;
    m.session = r.session;
    m.seq = r.seq;
    return post(SendKind::pong, m, r.ah, r.qpn, r.qkey, r.ping_rx);
  }

  void on_ping(const w::Message& m, const rdma::WorkCompletion& cpl);

  void drain_backlog();

  // --- completions -----------------------------------------------------------------------
  Status on_recv(const rdma::WorkCompletion& cpl);

  Status on_send(const rdma::WorkCompletion& cpl);

  // Drains the CQ completely (batch after batch), then re-posts receive buffers and flushes sends.
  Result<size_t> drain();

  // --- prober ----------------------------------------------------------------------------
  TargetState* target_of(const RdmaSlot& s) {
    if (s.target >= targets.size()) return nullptr;
    TargetState* t = targets[s.target].get();
    return (t->gen == s.target_gen && !t->retired) ? t : nullptr;
  }

  auto emitter(TargetState* t) {
    return [this, t](WindowAccumulator& a) {
      WindowStats s;
      s.protocol = Protocol::rdma;
      s.target = t->target.name;
      s.target_address = t->addr_text;
      a.finish(cfg.window.count(), s);
      if (on_window) on_window(std::move(s));
    };
  }

  void resolve(RdmaSlot& s, RdmaOutcome o);

  void apply_schedule(const RdmaSchedule& s);

  Status apply_targets();

  // Posts every PING that is due; returns the next due time.
  int64_t send_due(int64_t now, int64_t now_unix);

  void close_windows(int64_t now_unix);

  // Sleeps until a completion arrives, the wake fd fires or until_mono passes.
  Status sleep_until(int64_t until_mono);

  // Busy polling: spin on the CQ alone until it has completions, the next send is due, or
  // kBusyPolls empty polls have gone by. Reading the clocks on every turn (two reads, plus the
  // bookkeeping) was what bounded the RTT floor: on the qemu guest a clock read costs more than
  // an empty poll, and a PONG that landed mid-turn waited for the rest of it.
  static constexpr int kBusyPolls = 256;
  Status busy_spin(int64_t next);

  Status run();
};

}  // namespace weft::probe
