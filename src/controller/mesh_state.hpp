#pragma once
// The controller's state as the rest of the controller sees it: a small READ-ONLY query interface.
//
// Who uses it: the HTTP JSON API (docs/api.md), the Prometheus renderer (metrics_*.cpp) and the
// dashboard. All of them only read, so they code against MeshView and never see the ingest path,
// the stores or the locks behind it.
//
// Contract:
//  - Every call returns a consistent snapshot copy; callers may keep it as long as they like.
//  - Calls are thread-safe and cheap enough to make on every scrape/page load (they copy, they do
//    not touch the history store).
//  - Names are the host names agents registered with; `src` probes `dst`.
//  - Times are Unix nanoseconds (wall clock of the agent for window bounds, of the controller for
//    last_seen).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proto/rdma_endpoint.hpp"
#include "proto/window_stats.hpp"

namespace weft::controller {

// The latest window the controller holds for one ordered pair and protocol.
struct PairWindow {
  std::string src;
  std::string dst;
  proto::WindowStats window;     // window.protocol, window.target == dst
  int64_t received_unix_ns = 0;  // when the controller took it in
  // The pair's usual round trip before this window: a slow moving average (next_rtt_baseline) of
  // its windows' median network RTT (total RTT where there is none); 0 until it has one.
  int64_t baseline_rtt_ns = 0;

  // The window's median network RTT (total RTT if it has no network RTT); 0 with no answer.
  int64_t median_rtt_ns() const {
    if (window.network_rtt.count) return window.network_rtt.p50_ns;
    return window.rtt_incl_responder_delay.count ? window.rtt_incl_responder_delay.p50_ns : 0;
  }

  double loss_ratio() const {
    return window.sent == 0 ? 0.0 : static_cast<double>(window.lost) / static_cast<double>(window.sent);
  }
};

// What the dashboard's columnar mesh shows of one pair's latest window (mesh_columns.hpp): about a
// fifth of a PairWindow, no strings (the ends are indexes into MeshCells::names), so a
// million-pair mesh is copied and sorted in a fraction of the time.
struct PairCells {
  uint32_t src = 0, dst = 0;  // indexes into MeshCells::names
  proto::TimestampSource source = proto::TimestampSource::user;
  int64_t end_unix_ns = 0;
  uint64_t sent = 0, received = 0, lost = 0, late = 0, duplicate = 0;
  uint64_t rtt_count = 0;  // network RTT samples (0: no RTT values)
  int64_t p50_ns = 0, p90_ns = 0, p99_ns = 0, max_ns = 0;
};

struct MeshCells {
  std::vector<std::string> names;
  std::vector<PairCells> pairs;  // sorted by (names[src], names[dst])
};

enum class AgentState : uint8_t { up, down };
inline const char* to_string(AgentState s) { return s == AgentState::up ? "up" : "down"; }

// What an agent says about its own cost (sent with every report).
struct AgentHealth {
  double cpu_percent = 0;  // of one core, averaged since the previous report
  uint64_t rss_kb = 0;
  double probes_per_s = 0;       // probes sent per second, all protocols
  uint64_t dropped_windows = 0;  // windows it had to throw away (spool full), since start
  uint64_t spooled_windows = 0;  // windows waiting in its buffer/spool right now
  uint64_t prober_restarts = 0;  // since start
};

// Something an agent (or the controller about an agent) wants an operator to see.
struct Alarm {
  std::string kind;     // e.g. "prober_restarted", "responder_failed", "agent_down"
  std::string message;  // human readable
  int64_t since_unix_ns = 0;
};

struct AgentInfo {
  std::string name;
  std::vector<std::string> addresses;       // as registered
  std::vector<proto::Protocol> protocols;   // protocols it can probe and answer
  std::vector<proto::RdmaEndpoint> rdma{};  // its RDMA probe engines' addresses (rails), as registered
  std::string version;
  AgentState state = AgentState::up;
  int64_t registered_unix_ns = 0;
  int64_t last_seen_unix_ns = 0;
  int64_t up_again_unix_ns = 0;   // when it last came back after being down (0: never down)
  uint64_t pinglist_version = 0;  // the version of the pinglist it was last handed
  size_t pinglist_targets = 0;    // how many targets that pinglist has (all protocols)
  AgentHealth health;
  std::vector<Alarm> alarms;
};

// A named group of hosts probed as a full mesh over the given protocols.
struct GroupInfo {
  std::string name;
  std::vector<proto::Protocol> protocols;
  std::vector<std::string> members;
};

// Counters of the ingest path since the controller started (monotonic).
struct IngestCounters {
  uint64_t requests = 0;           // ingest requests received
  uint64_t requests_rejected = 0;  // answered 4xx (bad body, bad token, unknown agent ...)
  uint64_t windows_accepted = 0;   // stored
  uint64_t windows_duplicate = 0;  // already held (resends): not counted twice
  uint64_t windows_stale = 0;      // older than what dedup can still tell apart: dropped
  uint64_t store_errors = 0;       // requests answered 5xx because the store failed
  uint64_t bytes = 0;              // request bodies received
  uint64_t windows_refused = 0;    // to targets the agent was not given (report_policy.hpp): dropped
};

struct StoreInfo {
  std::string kind;      // "sqlite" or "redis"
  std::string location;  // file path or redis URL
  bool healthy = true;
  std::string last_error;
};

class MeshView {
 public:
  virtual ~MeshView() = default;

  // Latest window of every ordered pair for one protocol (pairs whose src or dst is unknown to the
  // plan are still returned: the data is real). Sorted by (src, dst).
  virtual std::vector<PairWindow> latest(proto::Protocol protocol) const = 0;
  // One pair, if held.
  virtual std::optional<PairWindow> latest_pair(proto::Protocol protocol, const std::string& src,
                                                const std::string& dst) const = 0;
  // Every agent that ever registered since start (or was restored), sorted by name.
  virtual std::vector<AgentInfo> agents() const = 0;
  // The probe plan's groups, in config order.
  virtual std::vector<GroupInfo> groups() const = 0;
  virtual IngestCounters ingest_counters() const = 0;
  virtual StoreInfo store_info() const = 0;
  // Window length from the config, nanoseconds.
  virtual int64_t window_ns() const = 0;
};

}  // namespace weft::controller
