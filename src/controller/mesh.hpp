#pragma once
// Mesh: the controller's in-memory state (implements the read-only MeshView).
//  - the latest window per (protocol, src, dst), plus the start times of the last few windows per
//    pair so a resent or reordered window is recognised (dedup);
//  - the agent registry (addresses, ports, state, health, alarms) and the pinglists it implies.
//
// Locking: one mutex per source host, so the ingest of one agent never waits for another agent
// and requests of the same agent are serialised (which dedup needs). The registry has its own.
#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.hpp"
#include "controller/config.hpp"
#include "controller/mesh_state.hpp"
#include "controller/pinglist.hpp"
#include "proto/registration.hpp"
#include "proto/report.hpp"

namespace weft::controller {

// How one window of a report was classified.
enum class WindowFate : uint8_t { accepted, duplicate, stale };

class Mesh final : public MeshView {
 public:
  // How many recent window starts are remembered per pair for dedup.
  static constexpr size_t kDedupDepth = 8;

  explicit Mesh(std::shared_ptr<const Config> cfg);

  void set_config(std::shared_ptr<const Config> cfg);
  std::shared_ptr<const Config> config() const;

  // --- registry ---
  void register_agent(const proto::Registration& r, int64_t now_ns);
  // An agent known from before a controller restart (its registration replayed from the store):
  // listed, and down until settle_restored() finds it was alive just before the restart. No-op if
  // already known.
  void restore_agent(const proto::Registration& r, int64_t registered_ns, int64_t now_ns);
  // After restore_agent() and restore(): a restored agent whose last sign of life (registration or
  // stored window) is within `agent_down_after` of `now_ns` is up again, so a restart leaves every
  // pinglist as it was (agents keep probing what they probed); the sweep takes it down as usual if
  // it stays silent. Returns how many came back up.
  size_t settle_restored(int64_t now_ns);
  bool is_registered(const std::string& name) const;
  // Forgets an agent: out of the agent list and every pinglist. False if it was not known.
  bool remove_agent(const std::string& name);
  // Seconds since the agent was last heard from if it is up, nullopt if it is down or unknown.
  std::optional<double> up_for(const std::string& name, int64_t now_ns) const;
  // Two hosts may not share a name (the default name is the host name, which network namespaces
  // and cloned images share): a registration from another address, while the agent of that name
  // is alive (seen within agent_down_after), is refused with a message naming both. The same
  // address is the same agent coming back (a restart) and always allowed.
  Status check_name_free(const proto::Registration& r, int64_t now_ns) const;
  // Marks agents without a report for `down_after` as down; returns the names that went down.
  // `feed_trusted_since_ns`: since when the replica feed has been read without failing (INT64_MAX
  // while it fails). An agent this replica knows alive only through the feed (it reports to another
  // replica) is not marked down for silence the feed could not carry: its time runs from the later
  // of its last sign of life and that instant, so a store outage does not take down every agent of
  // the other replicas (the feed runs through the store).
  std::vector<std::string> sweep(int64_t now_ns, int64_t feed_trusted_since_ns = 0);
  // True when the agent is registered with exactly this registration's addresses, protocols, ports,
  // RDMA endpoints and version: registering it again changes nothing to keep (the store already
  // holds it), so the controller can take it while the store is away.
  bool holds_registration(const proto::Registration& r) const;
  // The agent's pinglist (cached until membership or config changes).
  proto::Pinglist pinglist_for(const std::string& name);
  // The same, shared rather than copied: the registry lock is held only to take the pointer, so a
  // reader of a long list (report_policy.cpp reads every target) holds up no report's touch().
  std::shared_ptr<const proto::Pinglist> pinglist_shared(const std::string& name);
  // True if it changed what the agent was last handed (then the other replicas are told). A change
  // stays unpublished until pinglist_published() says the other replicas were told of it.
  bool record_pinglist_sent(const std::string& name, const proto::Pinglist& p);
  // What this replica handed agents and has not told the other replicas yet (the store was away):
  // (agent, version, targets), for the controller to publish again.
  struct HandedPinglist {
    std::string agent;
    uint64_t version = 0, targets = 0;
  };
  std::vector<HandedPinglist> unpublished_pinglists() const;
  void pinglist_published(const std::string& name, uint64_t version);
  // Another replica handed the agent this pinglist (controller/replica_sync.hpp).
  void peer_pinglist(const std::string& name, uint64_t version, uint64_t targets);
  // A report came in: last seen, health, alarms, and back to "up" if it was down. Returns the
  // version of the agent's pinglist (what the report's answer carries), under the same lock: the
  // registry lock is taken once per report, not twice.
  // `via_feed`: the report came to another replica (replica_sync.cpp), not here.
  uint64_t touch(const std::string& name, const proto::Health& h, std::span<const proto::AlarmEvent> alarms,
                 int64_t now_ns, bool via_feed = false);
  // A valid report of a registered agent arrived: it is alive now, and stays so until
  // report_done() while its windows are kept (the store may take seconds to answer or to fail, and
  // liveness comes from the agent's contact, not from the store): the sweep skips an agent with a
  // report in progress.
  void report_started(const std::string& name, int64_t now_ns);
  void report_done(const std::string& name);
  uint64_t pinglist_version(const std::string& name);

  // --- windows ---
  // Runs `fn` with the per-source lock held. Inside it, classify() decides each window's fate
  // (tentatively: it also remembers the start so a second copy in the same report is a duplicate)
  // and commit()/rollback() make it final. This lets the ingest write to the store while no other
  // request of the same agent can interleave, and undo everything if the store fails.
  class SourceTxn {
   public:
    WindowFate classify(const proto::WindowStats& w);
    // `accepted` = the windows classify() accepted, in the same order.
    void commit(std::span<const proto::WindowStats> accepted, int64_t now_ns);
    void rollback();
    // Runs fn (the store's write) with the source's state unlocked: readers of the mesh (the API,
    // /metrics) never wait for the store, which may take seconds to fail while a shard is away. The
    // source's next transaction still waits (ingest_mu): classify() and commit() stay one agent's
    // report at a time, and a reader meanwhile sees latest windows as they were (an accepted
    // window reaches latest only in commit()).
    template <typename Fn>
    void unlocked(Fn&& fn) {
      state_lock_.unlock();
      fn();
      state_lock_.lock();
    }

   private:
    friend class Mesh;
    struct Ring {
      std::array<int64_t, kDedupDepth> starts{};
      uint8_t n = 0;
    };
    struct Slot {
      bool has_latest = false;
      uint32_t txn_mark = 0;  // the txn that last saved this slot's ring for undo
      int64_t received_ns = 0;
      int64_t baseline_ns = 0;         // of the windows' median RTT (PairWindow, next_rtt_baseline)
      int64_t baseline_before_ns = 0;  // ... as it was before `latest`
      Ring ring;
      proto::WindowStats latest;  // .target is left empty: the dst id is the key
    };
    // The i-th window of an agent's report is almost always for the same (protocol, target) as the
    // i-th window of its previous report (agents report in pinglist order), so its slot is
    // remembered by position: a hit costs one short string compare instead of interning the name
    // and a hash lookup. A miss falls back to both and updates the guess. Slots are never erased,
    // so the pointers stay valid. At most one guess per pair of the source (bounded memory).
    struct PositionGuess {
      Slot* slot = nullptr;
      proto::Protocol protocol{};
      std::string target;
    };
    static constexpr size_t kMaxGuessedPositions = 65536;
    struct Source {
      std::mutex ingest_mu;  // one transaction at a time, held through the store's write
      std::mutex mu;         // the state below: classify, commit and readers
      uint32_t txn_serial = 0;
      std::unordered_map<uint64_t, Slot> pairs;  // key = protocol << 32 | dst id
      std::vector<PositionGuess> by_position;    // see PositionGuess
    };
    SourceTxn(Mesh& m, Source& s, std::unique_lock<std::mutex>& state_lock)
        : mesh_(m), src_(s), state_lock_(state_lock) {}
    Slot* slot_for(const proto::WindowStats& w);
    Mesh& mesh_;
    Source& src_;
    std::unique_lock<std::mutex>& state_lock_;
    size_t position_ = 0;  // how many windows classify() has seen in this txn
    std::vector<std::pair<Slot*, Ring>> undo_;
    std::vector<Slot*> accepted_;  // in classify order, for commit()
  };
  void with_source(const std::string& src, const std::function<void(SourceTxn&)>& fn);

  // Restores state from stored windows (controller restart): latest and dedup rings, and the
  // last-seen time of a restored agent (`received_ns`, when the store kept it).
  void restore(const std::string& src, std::span<const proto::WindowStats> windows, int64_t received_ns);
  // A report another controller sharing the store took in (controller/replica_sync.hpp): its
  // windows go through the same dedup and latest/baseline update as here, and the agent counts as
  // seen at `received_ns` (up again if it was down), so every replica holds the same mesh and
  // pinglists. Its health and alarms stay with the replica it reported to.
  void peer_report(const std::string& src, std::span<const proto::WindowStats> windows, int64_t received_ns);

  // --- counters (ingest updates them) ---
  struct Counters {
    std::atomic<uint64_t> requests{0}, requests_rejected{0}, windows_accepted{0}, windows_duplicate{0},
        windows_stale{0}, store_errors{0}, bytes{0},
        windows_refused{0};  // to targets not in the agent's pinglist (report_policy.hpp)
  };
  Counters& counters() { return counters_; }
  void set_store_info(StoreInfo info);

  // Registered agents (without copying them as agents() does).
  size_t agent_count() const;
  // Number of (protocol, src, dst) pairs held (a counter: no source lock taken).
  size_t pair_count() const;

  // The latest windows of the pairs from a host in `srcs` to a host in `dsts`, sorted by (src, dst).
  // Only those sources are visited and only those pairs copied: one rack's mesh in a 10,000-agent
  // fleet costs its 10,000 pairs, not the million of latest(protocol) filtered afterwards.
  // The same pairs as latest() (srcs and dsts null) or latest_between(), in the dashboard's compact
  // form (PairCells), in the same order.
  MeshCells latest_cells(proto::Protocol protocol, const std::vector<std::string>* srcs = nullptr,
                         const std::vector<std::string>* dsts = nullptr) const;
  std::vector<PairWindow> latest_between(proto::Protocol protocol, const std::vector<std::string>& srcs,
                                         const std::vector<std::string>& dsts) const;
  // The registered agents a group (members, both ends) or an arrow (from, to) of the config in force
  // holds, by its name; nullopt if the config has no such group or arrow.
  struct GroupEnds {
    std::vector<std::string> from, to;
  };
  std::optional<GroupEnds> group_ends(const std::string& name) const;

  // --- MeshView ---
  std::vector<PairWindow> latest(proto::Protocol protocol) const override;
  std::optional<PairWindow> latest_pair(proto::Protocol protocol, const std::string& src,
                                        const std::string& dst) const override;
  std::vector<AgentInfo> agents() const override;
  // At most `limit` agents whose names sort after `after` (all from the first if empty), in name
  // order: one page of the list, copied under the registry's lock without copying the fleet.
  std::vector<AgentInfo> agents_page(const std::string& after, size_t limit) const;
  std::vector<GroupInfo> groups() const override;
  IngestCounters ingest_counters() const override;
  StoreInfo store_info() const override;
  int64_t window_ns() const override;

 private:
  // The PairWindow of a slot that has a latest window (latest, latest_between).
  static PairWindow pair_window(std::string src, std::string dst, const SourceTxn::Slot& slot);
  // Calls fn(src_id, dst_id, slot) for every pair of `protocol` with a latest window, from a source
  // in `srcs` to a destination in `dsts` (null: any), each source under its lock; returns the name
  // table (by id) covering every id it passed (latest_between, latest_cells; defined in mesh.cpp).
  template <typename Fn>
  std::vector<std::string> visit_latest(proto::Protocol protocol, const std::vector<std::string>* srcs,
                                        const std::vector<std::string>* dsts, Fn&& fn) const;
  struct AgentRecord {
    AgentInfo info;
    Peer peer;
    uint64_t cached_generation = UINT64_MAX;
    std::shared_ptr<const proto::Pinglist> cached;
    bool seen_via_feed = false;  // its last sign of life came through the replica feed
    uint32_t reports_in_progress = 0;
  };

  // A report (here or at a replica) came in at `now_ns`: last seen, and up again if it was down.
  void seen_locked(AgentRecord& rec, int64_t now_ns, bool via_feed = false);
  // The agent's pinglist, recomputed if a change made it stale (reg_mu_ held).
  const proto::Pinglist& cached_pinglist_locked(const std::shared_ptr<const Config>& cfg, AgentRecord& rec);
  uint32_t intern(const std::string& name);
  std::string name_of(uint32_t id) const;
  // The peers a pinglist of `name` can hold (itself, and the members of the groups and the targets of
  // the arrows it is in), sorted by name: a pinglist then costs its targets, not the whole fleet
  // (with 10,000 agents every registration used to copy and glob-match all of them, per agent).
  std::vector<Peer> candidates_locked(const std::shared_ptr<const Config>& cfg, const std::string& name);
  void index_add_locked(const std::string& name);
  void index_remove_locked(const std::string& name);
  void invalidate_peers_locked(const std::string& name);

  mutable std::mutex cfg_mu_;
  std::shared_ptr<const Config> cfg_;

  // Host names <-> small ids, so pair keys are integers.
  mutable std::shared_mutex names_mu_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<SourceTxn::Source>> sources_;  // by id (sources_[id] may be null)

  mutable std::mutex reg_mu_;
  std::map<std::string, AgentRecord> agents_;
  uint64_t generation_ = 0;  // bumped when a pinglist could change (membership, state, config)
  std::set<std::string> unpublished_pinglists_;  // record_pinglist_sent changes not yet published
  // Registered names matching each group's members and each arrow's from/to, for index_.cfg (under
  // reg_mu_; rebuilt when the config changes, kept up to date as agents come and go).
  struct MemberIndex {
    std::shared_ptr<const Config> cfg;
    std::vector<std::set<std::string>> group, from, to;
  } mutable index_;

  Counters counters_;
  std::atomic<size_t> pairs_held_{0};  // slots made in all sources (pair_count)
  mutable std::mutex store_mu_;
  StoreInfo store_info_;
};

}  // namespace weft::controller
