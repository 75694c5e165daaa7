#pragma once
// The RDMA probe engine: one UD queue pair on one device/port/GID, shared by the prober (PINGs to
// every target) and the responder (PONG and follow-up to every PING it receives). One thread runs
// it. Timing and accounting are described in docs/rdma-probes.md; the pure parts live in
// wire.hpp, rtt.hpp, in_flight.hpp and windows.hpp beside this file, the engine itself in
// engine_impl.hpp (its state) and engine_setup/datapath/loop.cpp; every verb goes through src/rdma.
//
// Threading: run() on one thread; set_targets(), stop() and counters() from any other thread.
#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "probe/rtt.hpp"
#include "probe/window.hpp"
#include "proto/defaults.hpp"
#include "proto/rdma_endpoint.hpp"

namespace weft::probe {

inline constexpr uint32_t kDefaultRdmaQkey = proto::kDefaultRdmaQkey;  // what engines register

// What a peer needs to reach an engine's QP.
struct RdmaAddress {
  std::string device;
  uint8_t port = 1;
  bool ethernet = true;  // RoCE (addressed by GID) or InfiniBand (by LID, or GID across subnets)
  ibv_gid gid{};
  int gid_index = -1;
  uint16_t lid = 0;
  uint32_t qpn = 0;
  uint32_t qkey = kDefaultRdmaQkey;

  std::string to_string() const;  // "rxe0 port 1 gid ::ffff:10.9.0.1 (index 1) qpn 17 qkey 0x11111111"
};

struct RdmaTarget {
  std::string name;    // how the target is reported (pinglist name, or what the user typed)
  bool global = true;  // address by GID (RoCE; InfiniBand across subnets) or by LID
  ibv_gid gid{};
  uint16_t lid = 0;
  uint32_t qpn = 0;
  uint32_t qkey = kDefaultRdmaQkey;
};

struct RdmaEngineConfig {
  std::string device;  // "" = the first device
  uint8_t port = 1;
  int gid_index = -1;   // -1: the RoCE v2 GID of `address` (or the first IPv4 one); IB: 0
  std::string address;  // IPv4 address whose RoCE v2 GID to use
  uint32_t qkey = kDefaultRdmaQkey;
  uint8_t traffic_class = 0;  // GRH traffic class (DSCP << 2 | ECN) of every send
  uint8_t sl = 0;             // service level (InfiniBand; PFC priority on some RoCE set-ups)
  uint8_t hop_limit = 64;
  bool hardware_timestamps = true;  // use NIC completion timestamps when the device has them
  bool busy_poll = false;           // spin on the CQ instead of sleeping on its channel
  // After posting, poll this long for the send completions before sleeping, so that a PONG's
  // follow-up is not late by a wake-up (timing does not depend on it: see rtt.hpp).
  std::chrono::nanoseconds send_spin{std::chrono::microseconds(100)};
  bool respond = true;                                                 // answer PINGs (the responder half)
  std::chrono::nanoseconds interval{proto::defaults::kProbeInterval};  // per target
  std::chrono::nanoseconds timeout{proto::defaults::kProbeTimeout};
  std::chrono::nanoseconds window{proto::defaults::kWindow};
  // How long an answered probe waits for the responder's follow-up before only its total RTT is
  // recorded.
  std::chrono::nanoseconds followup_grace{std::chrono::milliseconds(250)};
  uint64_t count = 0;  // probes per target, then it stops sending; 0 = no limit
  // Receive queue capacity (clamped to the device). Buffers are posted for the peers the engine
  // has, not for all of it: see recv_ring.hpp.
  uint32_t recv_depth = 16384;
  // Receive buffers posted from the start whatever the peers (at least recv_ring.hpp's floor). The
  // ring is sized for peers that probe at an interval; an engine that must absorb bursts (peers
  // posting a whole send queue of PINGs at once) sets this to what one burst can bring.
  uint32_t recv_initial = 0;
  uint32_t send_depth = 2048;  // send queue depth (clamped to the device)
  size_t max_in_flight = 65536;
  size_t max_peers = 16384;  // responder: address handles kept for distinct probers
};

// How often targets are probed, when a probe is lost and how long windows are. The agent learns
// them from its pinglist after the engine already runs (its address went out at registration, so
// a new engine with a new QPN is not an option).
struct RdmaSchedule {
  std::chrono::nanoseconds interval{proto::defaults::kProbeInterval};
  std::chrono::nanoseconds timeout{proto::defaults::kProbeTimeout};
  std::chrono::nanoseconds window{proto::defaults::kWindow};
  bool operator==(const RdmaSchedule&) const = default;
};

struct RdmaCounters {
  uint64_t sent = 0;
  uint64_t received = 0;
  uint64_t lost = 0;
  uint64_t late = 0;
  uint64_t duplicate = 0;
  uint64_t evicted = 0;
  uint64_t weird = 0;
  uint64_t garbage = 0;          // datagrams that did not parse (counted and dropped)
  uint64_t unknown_session = 0;  // PONG/follow-up for another prober session
  uint64_t unknown_probe = 0;    // our session, a seq not in flight
  uint64_t send_errors = 0;      // posts or send completions that failed
  uint64_t recv_errors = 0;      // receive completions in error
  uint64_t pings_received = 0;   // responder
  uint64_t pongs_sent = 0;       // responder (send completed)
  uint64_t followups_sent = 0;   // responder
  uint64_t responder_drops = 0;  // PINGs not answered: reply backlog full or too many peers
  uint64_t recv_posted = 0;      // receive buffers posted now (always recv_ring when healthy)
  uint64_t recv_ring = 0;        // receive buffers the engine has (sized to its peers, grows)
};

struct RdmaProbeResult {
  std::string_view target;
  uint64_t seq = 0;
  bool answered = false;  // false: lost
  RttSample sample;
};

class RdmaEngine {
 public:
  static Result<std::unique_ptr<RdmaEngine>> create(const RdmaEngineConfig& config);
  ~RdmaEngine();
  RdmaEngine(const RdmaEngine&) = delete;
  RdmaEngine& operator=(const RdmaEngine&) = delete;

  const RdmaAddress& address() const;
  // Where RTTs come from (hardware or user = software stamps at polling) and, if not hardware, why.
  TimestampSource timestamp_source() const;
  const std::string& timestamp_note() const;

  // Thread-safe; applied at the next loop turn. Targets are identified by (name, address): ones
  // that stay keep their schedule and open windows.
  void set_targets(std::vector<RdmaTarget> targets);
  // Thread-safe; applied at the next loop turn (before targets given with it). When it differs
  // from the current one, every open window is finished early (its counts stay true) and the
  // targets' send phases start over; probes in flight keep their deadlines.
  Status set_schedule(const RdmaSchedule& schedule);
  // Optional, before run(): called from the run() thread for every resolved probe.
  void set_on_probe(std::function<void(const RdmaProbeResult&)> on_probe);
  // Optional, before run(): called from the run() thread for a target that cannot be probed at
  // all (its address handle could not be made), with the reason. The target gets no probes.
  void set_on_target_skipped(std::function<void(const RdmaTarget&, const std::string& why)> on_skipped);

  // Runs until stop() (also one called before run()); on_window gets every finished window
  // (protocol rdma) of every target. An engine is run once.
  Status run(std::function<void(WindowStats&&)> on_window);
  void stop();
  RdmaCounters counters() const;

  struct Impl;

 private:
  explicit RdmaEngine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::probe
