#include "controller/mesh.hpp"

#include <algorithm>

#include "controller/rtt_baseline.hpp"

namespace weft::controller {
namespace {
// The alarm text a restored agent carries until it is seen alive (settle_restored, a report).
constexpr std::string_view kRestartedNote = "no report since the controller restarted";

constexpr size_t kMaxAlarmsKept = 20;
constexpr size_t kMaxNames = 1'000'000;  // bounds memory if agents report garbage target names

uint64_t pair_key(proto::Protocol p, uint32_t dst) { return static_cast<uint64_t>(p) << 32 | dst; }

// The order latest and latest_between answer in.
void sort_by_pair(std::vector<PairWindow>& v) {
  std::sort(v.begin(), v.end(), [](const PairWindow& a, const PairWindow& b) {
    return std::tie(a.src, a.dst) < std::tie(b.src, b.dst);
  });
}

}  // namespace

Mesh::Mesh(std::shared_ptr<const Config> cfg) : cfg_(std::move(cfg)) {}

void Mesh::set_config(std::shared_ptr<const Config> cfg) {
  {
    std::lock_guard lk(cfg_mu_);
    cfg_ = std::move(cfg);
  }
  std::lock_guard lk(reg_mu_);
  ++generation_;
}

std::shared_ptr<const Config> Mesh::config() const {
  std::lock_guard lk(cfg_mu_);
  return cfg_;
}

uint32_t Mesh::intern(const std::string& name) {
  {
    std::shared_lock lk(names_mu_);
    if (auto it = ids_.find(name); it != ids_.end()) return it->second;
  }
  std::unique_lock lk(names_mu_);
  if (auto it = ids_.find(name); it != ids_.end()) return it->second;
  if (names_.size() >= kMaxNames) return UINT32_MAX;
  uint32_t id = static_cast<uint32_t>(names_.size());
  ids_.emplace(name, id);
  names_.push_back(name);
  sources_.emplace_back(nullptr);
  return id;
}

std::string Mesh::name_of(uint32_t id) const {
  std::shared_lock lk(names_mu_);
  return id < names_.size() ? names_[id] : std::string();
}

// ---- windows --------------------------------------------------------------------------------------

Mesh::SourceTxn::Slot* Mesh::SourceTxn::slot_for(const proto::WindowStats& w) {
  size_t pos = position_++;
  auto& guesses = src_.by_position;
  if (pos < guesses.size() && guesses[pos].protocol == w.protocol && guesses[pos].target == w.target)
    return guesses[pos].slot;
  uint32_t dst = mesh_.intern(w.target);
  if (dst == UINT32_MAX) return nullptr;  // name table full: refuse, never grow unbounded
  auto [at, inserted] = src_.pairs.try_emplace(pair_key(w.protocol, dst));
  if (inserted) mesh_.pairs_held_.fetch_add(1, std::memory_order_relaxed);
  Slot* slot = &at->second;
  // No more guesses than pairs: a backlog report (many windows per pair) must not grow memory.
  if (pos < src_.pairs.size() && pos < kMaxGuessedPositions) {
    if (pos >= guesses.size()) guesses.resize(pos + 1);
    guesses[pos].slot = slot;
    guesses[pos].protocol = w.protocol;
    guesses[pos].target = w.target;
  }
  return slot;
}

WindowFate Mesh::SourceTxn::classify(const proto::WindowStats& w) {
  Slot* slot = slot_for(w);
  if (!slot) return WindowFate::stale;
  Slot& s = *slot;
  if (s.txn_mark != src_.txn_serial) {
    undo_.emplace_back(&s, s.ring);
    s.txn_mark = src_.txn_serial;
  }
  Ring& r = s.ring;
  size_t min_i = 0;
  for (size_t i = 0; i < r.n; ++i) {
    if (r.starts[i] == w.start_unix_ns) return WindowFate::duplicate;
    if (r.starts[i] < r.starts[min_i]) min_i = i;
  }
  if (r.n < kDedupDepth) {
    r.starts[r.n++] = w.start_unix_ns;
  } else {
    // Older than every start we remember: it may be a copy of one we forgot, so it cannot be
    // counted safely. Agents deliver in order, so this only happens to very late resends.
    if (w.start_unix_ns < r.starts[min_i]) return WindowFate::stale;
    r.starts[min_i] = w.start_unix_ns;
  }
  accepted_.push_back(&s);
  return WindowFate::accepted;
}

void Mesh::SourceTxn::commit(std::span<const proto::WindowStats> accepted, int64_t now_ns) {
  size_t n = std::min(accepted.size(), accepted_.size());
  for (size_t i = 0; i < n; ++i) {
    Slot& s = *accepted_[i];
    const auto& w = accepted[i];
    if (!s.has_latest || w.start_unix_ns >= s.latest.start_unix_ns) {
      // The pair's usual RTT, for blame to see a link that got slower without losing anything.
      PairWindow as_pair;
      as_pair.window.network_rtt = w.network_rtt;
      as_pair.window.rtt_incl_responder_delay = w.rtt_incl_responder_delay;
      s.baseline_before_ns = s.baseline_ns;
      s.baseline_ns = next_rtt_baseline(s.baseline_ns, as_pair.median_rtt_ns());
      s.latest = w;
      s.latest.target.clear();
      s.latest.target.shrink_to_fit();
      s.has_latest = true;
      s.received_ns = now_ns;
    }
  }
  undo_.clear();
  accepted_.clear();
}

void Mesh::SourceTxn::rollback() {
  for (auto& [slot, ring] : undo_) slot->ring = ring;
  undo_.clear();
  accepted_.clear();
}

void Mesh::with_source(const std::string& src, const std::function<void(SourceTxn&)>& fn) {
  uint32_t id = intern(src);
  if (id == UINT32_MAX) return;
  SourceTxn::Source* source = nullptr;
  {
    std::shared_lock lk(names_mu_);
    source = sources_[id].get();
  }
  if (!source) {
    std::unique_lock lk(names_mu_);
    if (!sources_[id]) sources_[id] = std::make_unique<SourceTxn::Source>();
    source = sources_[id].get();
  }
  std::lock_guard ingest(source->ingest_mu);
  std::unique_lock lk(source->mu);
  ++source->txn_serial;
  SourceTxn txn(*this, *source, lk);
  fn(txn);
  txn.rollback();  // no-op after commit(); undoes a txn the callback left open
}

void Mesh::restore(const std::string& src, std::span<const proto::WindowStats> windows, int64_t received_ns) {
  with_source(src, [&](SourceTxn& txn) {
    std::vector<proto::WindowStats> acc;
    for (const auto& w : windows)
      if (txn.classify(w) == WindowFate::accepted) acc.push_back(w);
    txn.commit(acc, received_ns);
  });
  std::lock_guard lk(reg_mu_);
  if (auto it = agents_.find(src); it != agents_.end() && it->second.info.state == AgentState::down)
    it->second.info.last_seen_unix_ns = std::max(it->second.info.last_seen_unix_ns, received_ns);
}

// Slots are never erased, so a counter kept as they are made is exact: /healthz asks for it while
// 10,000 agents report, and counting by taking every source lock put it behind their ingest.
size_t Mesh::pair_count() const { return pairs_held_.load(std::memory_order_relaxed); }

PairWindow Mesh::pair_window(std::string src, std::string dst, const SourceTxn::Slot& slot) {
  PairWindow pw;
  pw.src = std::move(src);
  pw.dst = std::move(dst);
  pw.window = slot.latest;
  pw.window.target = pw.dst;
  pw.received_unix_ns = slot.received_ns;
  pw.baseline_rtt_ns = slot.baseline_before_ns;
  return pw;
}

// Lock order is source -> names (classify interns target names under the source lock), so readers
// copy what they need from the name table first and take the source locks after releasing it.
std::vector<PairWindow> Mesh::latest(proto::Protocol protocol) const {
  std::vector<std::string> names;
  std::vector<SourceTxn::Source*> sources;
  {
    std::shared_lock lk(names_mu_);
    names = names_;
    for (const auto& s : sources_) sources.push_back(s.get());
  }
  std::vector<PairWindow> out;
  for (size_t id = 0; id < sources.size(); ++id) {
    auto* s = sources[id];
    if (!s) continue;
    std::lock_guard sl(s->mu);
    for (const auto& [key, slot] : s->pairs) {
      if (!slot.has_latest || static_cast<proto::Protocol>(key >> 32) != protocol) continue;
      uint32_t dst = static_cast<uint32_t>(key);
      out.push_back(pair_window(names[id], dst < names.size() ? names[dst] : name_of(dst), slot));
    }
  }
  sort_by_pair(out);
  return out;
}

template <typename Fn>
std::vector<std::string> Mesh::visit_latest(proto::Protocol protocol, const std::vector<std::string>* srcs,
                                            const std::vector<std::string>* dsts, Fn&& fn) const {
  std::vector<std::string> names;
  std::vector<std::pair<uint32_t, SourceTxn::Source*>> sources;  // (id, source) of each wanted source
  std::vector<uint8_t> dst_ok;                                   // by id; empty: every destination
  {
    std::shared_lock lk(names_mu_);
    names = names_;
    if (dsts) {
      dst_ok.assign(names_.size(), 0);
      for (const auto& d : *dsts)
        if (auto it = ids_.find(d); it != ids_.end()) dst_ok[it->second] = 1;
    }
    if (srcs) {
      for (const auto& s : *srcs)
        if (auto it = ids_.find(s); it != ids_.end() && sources_[it->second])
          sources.emplace_back(it->second, sources_[it->second].get());
    } else {
      for (uint32_t id = 0; id < sources_.size(); ++id)
        if (sources_[id]) sources.emplace_back(id, sources_[id].get());
    }
  }
  uint32_t top = 0;
  for (const auto& [id, s] : sources) {
    std::lock_guard sl(s->mu);
    for (const auto& [key, slot] : s->pairs) {
      const uint32_t dst = static_cast<uint32_t>(key);
      if (!slot.has_latest || static_cast<proto::Protocol>(key >> 32) != protocol) continue;
      if (dsts && (dst >= dst_ok.size() || !dst_ok[dst])) continue;
      top = std::max({top, id, dst});
      fn(id, dst, slot);
    }
  }
  // A destination interned after the name table was copied (classify interns under the source
  // lock): take the table again for the missing names.
  if (top >= names.size()) {
    std::shared_lock lk(names_mu_);
    names = names_;
  }
  return names;
}

std::vector<PairWindow> Mesh::latest_between(proto::Protocol protocol, const std::vector<std::string>& srcs,
                                             const std::vector<std::string>& dsts) const {
  // Only listed destinations pass, and every one of them was in the name table when it was copied.
  std::vector<PairWindow> out;
  std::vector<std::pair<uint32_t, uint32_t>> ids;
  const auto names =
      visit_latest(protocol, &srcs, &dsts, [&](uint32_t src, uint32_t dst, const SourceTxn::Slot& slot) {
        out.push_back(pair_window({}, {}, slot));
        ids.emplace_back(src, dst);
      });
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].src = names[ids[i].first];
    out[i].dst = names[ids[i].second];
    out[i].window.target = out[i].dst;
  }
  sort_by_pair(out);
  return out;
}

MeshCells Mesh::latest_cells(proto::Protocol protocol, const std::vector<std::string>* srcs,
                             const std::vector<std::string>* dsts) const {
  MeshCells out;
  out.names =
      visit_latest(protocol, srcs, dsts, [&](uint32_t src, uint32_t dst, const SourceTxn::Slot& slot) {
        const proto::WindowStats& w = slot.latest;
        const proto::LatencySummary& r = w.network_rtt;
        out.pairs.push_back(PairCells{src, dst, w.timestamp_source, w.end_unix_ns, w.sent, w.received, w.lost,
                                      w.late, w.duplicate, r.count, r.p50_ns, r.p90_ns, r.p99_ns, r.max_ns});
      });
  // Rank names once, then sort the pairs by rank: the order of latest() without a string compare
  // per comparison.
  std::vector<uint32_t> order(out.names.size()), rank(out.names.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return out.names[a] < out.names[b]; });
  for (uint32_t i = 0; i < order.size(); ++i) rank[order[i]] = i;
  std::sort(out.pairs.begin(), out.pairs.end(), [&](const PairCells& a, const PairCells& b) {
    return std::pair(rank[a.src], rank[a.dst]) < std::pair(rank[b.src], rank[b.dst]);
  });
  return out;
}

std::optional<PairWindow> Mesh::latest_pair(proto::Protocol protocol, const std::string& src,
                                            const std::string& dst) const {
  SourceTxn::Source* s = nullptr;
  uint32_t dst_id = 0;
  {
    std::shared_lock lk(names_mu_);
    auto si = ids_.find(src), di = ids_.find(dst);
    if (si == ids_.end() || di == ids_.end() || !sources_[si->second]) return std::nullopt;
    s = sources_[si->second].get();
    dst_id = di->second;
  }
  std::lock_guard sl(s->mu);
  auto it = s->pairs.find(pair_key(protocol, dst_id));
  if (it == s->pairs.end() || !it->second.has_latest) return std::nullopt;
  return pair_window(src, dst, it->second);  // the same fields as latest(), the baseline too
}

// ---- registry -------------------------------------------------------------------------------------

namespace {
// What a registration says of an agent, the same whether it just came or was replayed at start.
void fill_info(AgentInfo& info, const proto::Registration& r, int64_t registered_ns) {
  info.name = r.name;
  info.addresses = r.addresses;
  info.protocols = r.protocols;
  info.rdma = r.rdma;
  info.version = r.version;
  info.registered_unix_ns = registered_ns;
  info.last_seen_unix_ns = registered_ns;
}

Peer peer_of(const proto::Registration& r, bool up) {
  return Peer{r.name,      r.addresses.empty() ? std::string() : r.addresses.front(),
              r.protocols, r.udp_port,
              r.tcp_port,  up,
              r.rdma};
}
}  // namespace

void Mesh::register_agent(const proto::Registration& r, int64_t now_ns) {
  std::lock_guard lk(reg_mu_);
  AgentRecord& rec = agents_[r.name];
  bool was_new = rec.info.name.empty();
  if (was_new) index_add_locked(r.name);
  fill_info(rec.info, r, now_ns);
  bool was_down = rec.info.state == AgentState::down;
  if (was_down && !was_new) rec.info.up_again_unix_ns = now_ns;
  rec.info.state = AgentState::up;
  std::erase_if(rec.info.alarms, [](const Alarm& a) { return a.kind == "agent_down"; });
  Peer p = peer_of(r, true);
  // A restarted RDMA engine has a new QPN: peers' pinglists must change with it.
  bool changed = was_new || was_down || p.address != rec.peer.address || p.protocols != rec.peer.protocols ||
                 p.udp_port != rec.peer.udp_port || p.tcp_port != rec.peer.tcp_port ||
                 p.rdma != rec.peer.rdma;
  rec.peer = std::move(p);
  if (changed) {
    rec.cached_generation = UINT64_MAX;
    invalidate_peers_locked(r.name);
  }
}

// A registration replayed from the store at start: listed, down until settle_restored() or a report, and with
// all it registered (its RDMA engines too: an agent that kept running keeps their addresses).
void Mesh::restore_agent(const proto::Registration& r, int64_t registered_ns, int64_t now_ns) {
  std::lock_guard lk(reg_mu_);
  if (agents_.contains(r.name)) return;
  AgentRecord& rec = agents_[r.name];
  index_add_locked(r.name);
  fill_info(rec.info, r, registered_ns);
  rec.info.state = AgentState::down;
  rec.info.alarms.push_back({"agent_down", std::string(kRestartedNote), now_ns});
  rec.peer = peer_of(r, false);
  ++generation_;
}

size_t Mesh::settle_restored(int64_t now_ns) {
  int64_t down_after = config()->agent_down_after_ns;
  size_t up = 0;
  std::lock_guard lk(reg_mu_);
  for (auto& [name, rec] : agents_) {
    if (rec.info.state != AgentState::down || now_ns - rec.info.last_seen_unix_ns > down_after) continue;
    const bool restored_only = std::ranges::any_of(rec.info.alarms, [](const Alarm& a) {
      return a.kind == "agent_down" && a.message == kRestartedNote;
    });
    if (!restored_only) continue;
    rec.info.state = AgentState::up;
    rec.peer.up = true;
    std::erase_if(rec.info.alarms, [](const Alarm& a) { return a.kind == "agent_down"; });
    ++up;
  }
  if (up) ++generation_;
  return up;
}

Status Mesh::check_name_free(const proto::Registration& r, int64_t now_ns) const {
  int64_t down_after = config()->agent_down_after_ns;
  std::lock_guard lk(reg_mu_);
  auto it = agents_.find(r.name);
  if (it == agents_.end()) return {};
  const AgentInfo& have = it->second.info;
  if (have.state != AgentState::up || now_ns - have.last_seen_unix_ns > down_after) return {};
  const std::string& old_addr = have.addresses.empty() ? std::string() : have.addresses.front();
  const std::string& new_addr = r.addresses.empty() ? std::string() : r.addresses.front();
  if (old_addr == new_addr) return {};
  return fail(
      "agent name '{}' is taken by the agent at {} (last seen {} s ago); give this agent (at {}) its own "
      "name with --name, or stop the other one",
      r.name, old_addr, (now_ns - have.last_seen_unix_ns) / 1'000'000'000, new_addr);
}

bool Mesh::remove_agent(const std::string& name) {
  std::lock_guard lk(reg_mu_);
  if (!agents_.contains(name)) return false;
  invalidate_peers_locked(name);
  agents_.erase(name);
  unpublished_pinglists_.erase(name);
  index_remove_locked(name);
  return true;
}

std::optional<double> Mesh::up_for(const std::string& name, int64_t now_ns) const {
  std::lock_guard lk(reg_mu_);
  auto it = agents_.find(name);
  if (it == agents_.end() || it->second.info.state != AgentState::up) return std::nullopt;
  return static_cast<double>(now_ns - it->second.info.last_seen_unix_ns) / 1e9;
}

bool Mesh::holds_registration(const proto::Registration& r) const {
  std::lock_guard lk(reg_mu_);
  auto it = agents_.find(r.name);
  if (it == agents_.end()) return false;
  const AgentRecord& rec = it->second;
  const Peer p = peer_of(r, rec.peer.up);
  return rec.info.addresses == r.addresses && rec.info.version == r.version &&
         p.address == rec.peer.address && p.protocols == rec.peer.protocols &&
         p.udp_port == rec.peer.udp_port && p.tcp_port == rec.peer.tcp_port && p.rdma == rec.peer.rdma;
}

bool Mesh::is_registered(const std::string& name) const {
  std::lock_guard lk(reg_mu_);
  return agents_.contains(name);
}

// Walks the registry in slices of kSweepSlice agents, taking the registry lock per slice: with 10,000
// agents one walk under the lock would hold up every registration, report and API read for it.
std::vector<std::string> Mesh::sweep(int64_t now_ns, int64_t feed_trusted_since_ns) {
  constexpr size_t kSweepSlice = 256;
  int64_t down_after = config()->agent_down_after_ns;
  std::vector<std::string> gone;
  std::string next;  // the first name of the next slice
  bool more = true;
  while (more) {
    std::lock_guard lk(reg_mu_);
    auto it = agents_.lower_bound(next);
    size_t first_gone = gone.size();
    for (size_t n = 0; it != agents_.end() && n < kSweepSlice; ++it, ++n) {
      auto& [name, rec] = *it;
      const int64_t silent_since = rec.seen_via_feed
                                       ? std::max(rec.info.last_seen_unix_ns, feed_trusted_since_ns)
                                       : rec.info.last_seen_unix_ns;
      if (rec.info.state == AgentState::up && rec.reports_in_progress == 0 &&
          now_ns - silent_since > down_after) {
        rec.info.state = AgentState::down;
        rec.peer.up = false;
        // Stated from the last report, not from this sweep's clock, so every replica (each sweeping
        // on its own) raises the same alarm.
        rec.info.alarms.push_back({"agent_down",
                                   fmt::format("no report for {} s", down_after / 1'000'000'000),
                                   rec.info.last_seen_unix_ns + down_after});
        gone.push_back(name);
      }
    }
    more = it != agents_.end();
    if (more) next = it->first;
    for (size_t i = first_gone; i < gone.size(); ++i) invalidate_peers_locked(gone[i]);
  }
  return gone;
}

namespace {
bool matches(const std::vector<std::string>& patterns, const std::string& name) {
  for (const auto& p : patterns)
    if (glob_match(p, name)) return true;
  return false;
}
}  // namespace

void Mesh::index_add_locked(const std::string& name) {
  if (!index_.cfg) return;  // built on first use
  const Config& c = *index_.cfg;
  for (size_t i = 0; i < c.groups.size(); ++i)
    if (matches(c.groups[i].members, name)) index_.group[i].insert(name);
  for (size_t i = 0; i < c.arrows.size(); ++i) {
    if (matches(c.arrows[i].from, name)) index_.from[i].insert(name);
    if (matches(c.arrows[i].to, name)) index_.to[i].insert(name);
  }
}

// Only the pinglists that can hold `name` change with it: those of its group mates and of the agents
// whose arrows point at it. With the index built for the config in force, just those are marked
// stale (a registration in a 10,000-agent fleet recomputes ~100 pinglists, not 10,000); else all.
void Mesh::invalidate_peers_locked(const std::string& name) {
  if (!index_.cfg || index_.cfg != config()) {
    ++generation_;
    return;
  }
  auto stale = [&](const std::set<std::string>& names) {
    for (const auto& n : names)
      if (auto it = agents_.find(n); it != agents_.end()) it->second.cached_generation = UINT64_MAX;
  };
  for (const auto& g : index_.group)
    if (g.contains(name)) stale(g);
  for (size_t i = 0; i < index_.to.size(); ++i)
    if (index_.to[i].contains(name)) stale(index_.from[i]);
}

void Mesh::index_remove_locked(const std::string& name) {
  for (auto* sets : {&index_.group, &index_.from, &index_.to})
    for (auto& s : *sets) s.erase(name);
}

std::vector<Peer> Mesh::candidates_locked(const std::shared_ptr<const Config>& cfg, const std::string& name) {
  if (index_.cfg != cfg) {
    index_ = MemberIndex{cfg, std::vector<std::set<std::string>>(cfg->groups.size()),
                         std::vector<std::set<std::string>>(cfg->arrows.size()),
                         std::vector<std::set<std::string>>(cfg->arrows.size())};
    for (const auto& [n, rec] : agents_) index_add_locked(n);
  }
  std::set<std::string> names{name};
  for (const auto& g : index_.group)
    if (g.contains(name)) names.insert(g.begin(), g.end());
  for (size_t i = 0; i < index_.from.size(); ++i)
    if (index_.from[i].contains(name)) names.insert(index_.to[i].begin(), index_.to[i].end());
  std::vector<Peer> out;
  out.reserve(names.size());
  for (const auto& n : names)
    if (auto it = agents_.find(n); it != agents_.end()) out.push_back(it->second.peer);
  return out;
}

const proto::Pinglist& Mesh::cached_pinglist_locked(const std::shared_ptr<const Config>& cfg,
                                                    AgentRecord& rec) {
  if (rec.cached_generation != generation_ || !rec.cached) {
    rec.cached = std::make_shared<const proto::Pinglist>(
        compute_pinglist(*cfg, rec.info.name, candidates_locked(cfg, rec.info.name)));
    rec.cached_generation = generation_;
  }
  return *rec.cached;
}

std::shared_ptr<const proto::Pinglist> Mesh::pinglist_shared(const std::string& name) {
  auto cfg = config();
  {
    std::lock_guard lk(reg_mu_);
    if (auto it = agents_.find(name); it != agents_.end()) {
      (void)cached_pinglist_locked(cfg, it->second);
      return it->second.cached;
    }
  }
  return std::make_shared<const proto::Pinglist>(compute_pinglist(*cfg, name, {}));
}

// Copied after the registry lock is released.
proto::Pinglist Mesh::pinglist_for(const std::string& name) { return *pinglist_shared(name); }

// Answers from the cache without copying the list.
uint64_t Mesh::pinglist_version(const std::string& name) {
  auto cfg = config();
  std::lock_guard lk(reg_mu_);
  auto it = agents_.find(name);
  if (it == agents_.end()) return compute_pinglist(*cfg, name, {}).version;
  return cached_pinglist_locked(cfg, it->second).version;
}

bool Mesh::record_pinglist_sent(const std::string& name, const proto::Pinglist& p) {
  std::lock_guard lk(reg_mu_);
  auto it = agents_.find(name);
  if (it == agents_.end()) return false;
  AgentInfo& a = it->second.info;
  const bool changed = a.pinglist_version != p.version || a.pinglist_targets != p.target_count();
  a.pinglist_version = p.version;
  a.pinglist_targets = p.target_count();
  if (changed) unpublished_pinglists_.insert(name);
  return changed;
}

std::vector<Mesh::HandedPinglist> Mesh::unpublished_pinglists() const {
  std::lock_guard lk(reg_mu_);
  std::vector<HandedPinglist> out;
  for (const auto& name : unpublished_pinglists_)
    if (auto it = agents_.find(name); it != agents_.end())
      out.push_back({name, it->second.info.pinglist_version, it->second.info.pinglist_targets});
  return out;
}

void Mesh::pinglist_published(const std::string& name, uint64_t version) {
  std::lock_guard lk(reg_mu_);
  auto it = agents_.find(name);
  // A newer list handed meanwhile stays to be published.
  if (it == agents_.end() || it->second.info.pinglist_version == version) unpublished_pinglists_.erase(name);
}

void Mesh::peer_pinglist(const std::string& name, uint64_t version, uint64_t targets) {
  std::lock_guard lk(reg_mu_);
  if (auto it = agents_.find(name); it != agents_.end()) {
    it->second.info.pinglist_version = version;
    it->second.info.pinglist_targets = targets;
  }
}

void Mesh::seen_locked(AgentRecord& rec, int64_t now_ns, bool via_feed) {
  AgentInfo& a = rec.info;
  // The newest sign of life says how it came (a replica's may be older than one seen here).
  if (now_ns >= a.last_seen_unix_ns) rec.seen_via_feed = via_feed;
  a.last_seen_unix_ns = std::max(a.last_seen_unix_ns, now_ns);
  if (a.state == AgentState::down) {
    a.state = AgentState::up;
    a.up_again_unix_ns = now_ns;
    rec.peer.up = true;
    std::erase_if(a.alarms, [](const Alarm& al) { return al.kind == "agent_down"; });
    invalidate_peers_locked(a.name);
  }
}

void Mesh::peer_report(const std::string& src, std::span<const proto::WindowStats> windows,
                       int64_t received_ns) {
  restore(src, windows, received_ns);
  std::lock_guard lk(reg_mu_);
  if (auto it = agents_.find(src); it != agents_.end())
    seen_locked(it->second, received_ns, /*via_feed=*/true);
}

void Mesh::report_started(const std::string& name, int64_t now_ns) {
  std::lock_guard lk(reg_mu_);
  if (auto it = agents_.find(name); it != agents_.end()) {
    seen_locked(it->second, now_ns);
    ++it->second.reports_in_progress;
  }
}

void Mesh::report_done(const std::string& name) {
  std::lock_guard lk(reg_mu_);
  if (auto it = agents_.find(name); it != agents_.end() && it->second.reports_in_progress > 0)
    --it->second.reports_in_progress;
}

uint64_t Mesh::touch(const std::string& name, const proto::Health& h,
                     std::span<const proto::AlarmEvent> alarms, int64_t now_ns, bool via_feed) {
  auto cfg = config();
  std::lock_guard lk(reg_mu_);
  auto it = agents_.find(name);
  if (it == agents_.end()) return compute_pinglist(*cfg, name, {}).version;
  AgentInfo& a = it->second.info;
  seen_locked(it->second, now_ns, via_feed);
  a.health = AgentHealth{h.cpu_percent,     h.rss_kb,          h.probes_per_s,
                         h.dropped_windows, h.spooled_windows, h.prober_restarts};
  for (const auto& e : alarms) a.alarms.push_back({e.kind, e.message, e.unix_ns});
  if (a.alarms.size() > kMaxAlarmsKept) a.alarms.erase(a.alarms.begin(), a.alarms.end() - kMaxAlarmsKept);
  return cached_pinglist_locked(cfg, it->second).version;
}

std::vector<AgentInfo> Mesh::agents() const {
  std::lock_guard lk(reg_mu_);
  std::vector<AgentInfo> out;
  for (const auto& [name, rec] : agents_) out.push_back(rec.info);
  return out;
}

std::vector<AgentInfo> Mesh::agents_page(const std::string& after, size_t limit) const {
  std::lock_guard lk(reg_mu_);
  std::vector<AgentInfo> out;
  for (auto it = after.empty() ? agents_.begin() : agents_.upper_bound(after);
       it != agents_.end() && out.size() < limit; ++it)
    out.push_back(it->second.info);
  return out;
}

size_t Mesh::agent_count() const {
  std::lock_guard lk(reg_mu_);
  return agents_.size();
}

std::vector<GroupInfo> Mesh::groups() const {
  auto cfg = config();
  std::vector<GroupInfo> out;
  std::vector<std::string> names;
  {
    std::lock_guard lk(reg_mu_);
    // The member index (built with the first pinglist) already knows: no glob over the fleet.
    if (index_.cfg == cfg) {
      for (size_t i = 0; i < cfg->groups.size(); ++i)
        out.push_back({cfg->groups[i].name, cfg->groups[i].protocols,
                       std::vector<std::string>(index_.group[i].begin(), index_.group[i].end())});
      for (size_t i = 0; i < cfg->arrows.size(); ++i) {
        std::set<std::string> m = index_.from[i];
        m.insert(index_.to[i].begin(), index_.to[i].end());
        out.push_back(
            {cfg->arrows[i].name, cfg->arrows[i].protocols, std::vector<std::string>(m.begin(), m.end())});
      }
      return out;
    }
    for (const auto& [name, rec] : agents_) names.push_back(name);
  }
  auto members = [&](const std::vector<std::string>& pats) {
    std::vector<std::string> m;
    for (const auto& n : names)
      for (const auto& p : pats)
        if (glob_match(p, n)) {
          m.push_back(n);
          break;
        }
    return m;
  };
  for (const auto& g : cfg->groups) out.push_back({g.name, g.protocols, members(g.members)});
  // An arrow is listed as a group too: its members are both ends, so a heatmap can show it.
  for (const auto& a : cfg->arrows) {
    auto m = members(a.from);
    for (auto& n : members(a.to))
      if (std::find(m.begin(), m.end(), n) == m.end()) m.push_back(std::move(n));
    std::sort(m.begin(), m.end());
    out.push_back({a.name, a.protocols, std::move(m)});
  }
  return out;
}

std::optional<Mesh::GroupEnds> Mesh::group_ends(const std::string& name) const {
  auto cfg = config();
  const GroupRule* g = nullptr;
  const ArrowRule* a = nullptr;
  size_t gi = 0, ai = 0;
  for (size_t i = 0; i < cfg->groups.size(); ++i)
    if (cfg->groups[i].name == name) g = &cfg->groups[gi = i];
  for (size_t i = 0; i < cfg->arrows.size(); ++i)
    if (cfg->arrows[i].name == name) a = &cfg->arrows[ai = i];
  if (!g && !a) return std::nullopt;
  if (g) a = nullptr;  // a group shadows an arrow of the same name (as the API always did)
  GroupEnds out;
  std::lock_guard lk(reg_mu_);
  if (index_.cfg == cfg) {  // the member index knows (built with the first pinglist)
    if (g) {
      out.from.assign(index_.group[gi].begin(), index_.group[gi].end());
      out.to = out.from;
    } else {
      out.from.assign(index_.from[ai].begin(), index_.from[ai].end());
      out.to.assign(index_.to[ai].begin(), index_.to[ai].end());
    }
    return out;
  }
  for (const auto& [n, rec] : agents_) {
    if (g && matches(g->members, n)) out.from.push_back(n);
    if (a && matches(a->from, n)) out.from.push_back(n);
    if (a && matches(a->to, n)) out.to.push_back(n);
  }
  if (g) out.to = out.from;
  return out;
}

IngestCounters Mesh::ingest_counters() const {
  return {counters_.requests.load(),
          counters_.requests_rejected.load(),
          counters_.windows_accepted.load(),
          counters_.windows_duplicate.load(),
          counters_.windows_stale.load(),
          counters_.store_errors.load(),
          counters_.bytes.load(),
          counters_.windows_refused.load()};
}

void Mesh::set_store_info(StoreInfo info) {
  std::lock_guard lk(store_mu_);
  store_info_ = std::move(info);
}

StoreInfo Mesh::store_info() const {
  std::lock_guard lk(store_mu_);
  return store_info_;
}

int64_t Mesh::window_ns() const { return config()->window_ns; }

}  // namespace weft::controller
