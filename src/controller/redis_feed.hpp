#pragma once
// The replicas' change feed: several controllers sharing one Redis (or Redis Cluster) each take in
// the reports, registrations and removals of the agents that talk to it, and publish them here, so
// every other replica applies the same events to its own in-memory mesh and agent list. Then the
// mesh, the suspects and the pinglists are the same whichever replica answers (issue 15), and an
// agent that fails over to another replica is already known there.
//
// Events go to kStreams Redis streams `weft:{feed.N}` (N = FNV-1a of the agent's name mod
// kStreams: one agent's events stay in one stream, in order, and the streams spread over the
// cluster's shards). A report's event carries its stored windows in the wire's window-list
// encoding, so a replica sees every window (not only the latest) and its per-pair baselines,
// which blame compares with, evolve exactly as the ingesting replica's do. Streams are trimmed to
// the last kKeepMs (MINID ~): a replica more than that behind misses events.
//
// Publishing is after the store's write and best effort: if it fails, the windows are durable but
// the other replicas see that agent's state only with its next report (logged and counted). An
// entry a lost connection made the publisher send twice is harmless: replicas classify windows as
// duplicates, and registrations and removals are idempotent.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "controller/redis_conn.hpp"
#include "controller/store.hpp"

namespace weft::controller::redis {

class Feed {
 public:
  static constexpr int kStreams = 4;
  static constexpr int64_t kKeepMs = 60'000;
  // At most this many entries per stream and poll (a replica catching up takes several polls).
  static constexpr int kPollCount = 2000;

  // `replica` names this controller in its entries: its own are skipped when it polls.
  explicit Feed(std::string replica) : replica_(std::move(replica)) {}

  static std::string stream_of(std::string_view agent);
  static std::string stream(int i);

  // The XADD of one event (route it with stream_of(agent)).
  Command report(const std::string& agent, std::span<const proto::WindowStats> windows, int64_t received_ns,
                 std::string_view encoded) const;
  Command registration(const std::string& agent, std::string_view body, int64_t received_ns) const;
  Command removal(const std::string& agent) const;
  Command agent_state(const std::string& agent, std::string_view state, int64_t received_ns) const;
  Command pinglist(const std::string& agent, uint64_t version, uint64_t targets) const;

  // Starts reading at the streams' current ends (before the controller restores from the store,
  // so nothing published meanwhile is missed; what is seen twice is harmless).
  Status start(Conn& conn);
  // Calls fn for every event of another replica since the last poll, per stream in order.
  Result<size_t> poll(Conn& conn, const PeerEventFn& fn);

 private:
  Command entry(const std::string& agent, char kind, int64_t received_ns) const;
  std::string replica_;
  std::array<std::string, kStreams> cursor_;
};

}  // namespace weft::controller::redis
