#pragma once
// Where windows are kept beyond memory. Two implementations behind this one interface:
//  - SqliteStore (default, no service needed): history in a local SQLite file (WAL, group commit,
//    one row per report and source with the windows packed in a blob, retention by age).
//  - RedisStore: latest per pair in hashes, history in sorted sets (keys in docs/store-redis.md).
// Both also keep the agents' registrations, so a restarted controller still lists every agent.
//
// The in-memory latest mesh and dedup state live in Mesh; a store only has to make an accepted
// batch durable, answer history queries, and give back recent windows after a restart.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "controller/mesh_state.hpp"
#include "controller/redis_tls.hpp"
#include "proto/window_stats.hpp"

namespace weft::controller {

// What another controller sharing the store did (controller/redis_feed.hpp): a report it took in
// (the windows it stored, each with its target), an agent it registered or one it forgot.
struct PeerEvent {
  enum class Kind : uint8_t { report, registration, removal, agent_state, pinglist };
  Kind kind = Kind::report;
  std::string agent;
  int64_t received_ns = 0;                  // report, registration, agent_state: when that replica took it
  std::vector<proto::WindowStats> windows;  // report
  std::string registration;                 // registration: the body as received
  std::string agent_state;                  // agent_state: the report's health and alarms (agent_state_json)
  uint64_t pinglist_version = 0;            // pinglist: what that replica handed the agent
  uint64_t pinglist_targets = 0;
};
using PeerEventFn = std::function<void(const PeerEvent&)>;

class Store {
 public:
  virtual ~Store() = default;

  // Makes all of `windows` (all from `src`) durable, or none of them. Thread-safe; may block until
  // the data is committed (the ingest acknowledges only after this returns). `encoded`, if not
  // empty, is exactly these windows in the wire's window-list encoding (a store may keep it as is).
  virtual Status append(const std::string& src, std::span<const proto::WindowStats> windows,
                        int64_t received_ns, std::string_view encoded = {}) = 0;

  // Windows of one pair with start >= since_ns and start < until_ns, oldest first, at most `limit`.
  virtual Result<std::vector<proto::WindowStats>> history(proto::Protocol protocol, const std::string& src,
                                                          const std::string& dst, int64_t since_ns,
                                                          int64_t until_ns, size_t limit) = 0;

  // Calls fn(src, windows, received_ns) for what was stored with a window start >= since_ns, in the
  // order it was stored (used to rebuild the latest mesh and dedup state after a restart).
  using RestoreFn = std::function<void(const std::string&, std::span<const proto::WindowStats>, int64_t)>;
  virtual Status load_recent(int64_t since_ns, const RestoreFn& fn) = 0;

  // Keeps an agent's registration as it was received (the POST /api/v1/register body, opaque to the
  // store), replacing an earlier one of the same name. Durable when it returns, like append().
  virtual Status save_registration(const std::string& name, std::string_view registration,
                                   int64_t received_ns) = 0;
  // Forgets an agent's registration (DELETE /api/v1/agents/NAME); its history stays until retention.
  // Durable when it returns. Not an error when there is none.
  virtual Status remove_registration(const std::string& name) = 0;
  // Calls fn(registration, received_ns) for every agent's last saved registration.
  using RegistrationFn = std::function<void(std::string_view, int64_t)>;
  virtual Status load_registrations(const RegistrationFn& fn) = 0;

  // Deletes history whose window ended before `before_ns`.
  virtual Status apply_retention(int64_t before_ns) = 0;

  virtual StoreInfo info() const = 0;

  // Calls fn for what the other controllers sharing this store did since the last call (each
  // agent's events in order) and returns how many; one thread at a time. A store only one
  // controller uses (SQLite) has none. append(), save_registration() and remove_registration()
  // are what a shared store publishes to the others.
  virtual Result<size_t> poll_peers(const PeerEventFn&) { return size_t{0}; }
  // True when other controllers may share this store (then the two calls below reach them).
  virtual bool shared() const { return false; }
  // Best effort (a failure is logged, not returned): what an agent said of itself in a report
  // (every report, also one without new windows: it is the agent's sign of life), so every replica
  // lists the agent alike (docs/store-redis.md).
  virtual void publish_agent_state(const std::string& /*agent*/, std::string_view /*state*/,
                                   int64_t /*received_ns*/) {}
  // The pinglist a replica handed an agent: kept (a replica started later reads it with
  // load_pinglists) and published. Fails while the store is away: the caller tries again later
  // (a change is rare, and one not passed on would stay unseen until the next).
  virtual Status publish_pinglist(const std::string& /*agent*/, uint64_t /*version*/, uint64_t /*targets*/) {
    return {};
  }
  // Calls fn(agent, version, targets) for the pinglist each agent was last handed by any replica.
  using PinglistFn = std::function<void(const std::string&, uint64_t, uint64_t)>;
  virtual Status load_pinglists(const PinglistFn&) { return {}; }
};

// Error::code when a store could not be reached (connection refused or timed out, a lost
// connection, a cluster down or still loading): waiting may cure it, unlike a wrong URL or password.
inline constexpr int kStoreUnreachable = 0x57'0001;

// "sqlite:PATH", "redis://HOST:PORT", "rediss://HOST:PORT" (TLS, verified with `tls`),
// "redis+unix:///PATH", "redis-cluster://..." or "rediss-cluster://...".
Result<std::unique_ptr<Store>> open_store(const std::string& spec, const redis::TlsFiles& tls = {});

Result<std::unique_ptr<Store>> open_sqlite_store(const std::string& path);
Result<std::unique_ptr<Store>> open_redis_store(const std::string& spec, const redis::TlsFiles& tls = {});

}  // namespace weft::controller
