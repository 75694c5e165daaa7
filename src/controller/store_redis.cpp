// The Redis store (keys documented in docs/store-redis.md). Every key of one agent's windows
// carries the hash tag {AGENT}, so in a Redis Cluster they all live on one shard and a report is
// still written in one MULTI/EXEC; the same keys work on a single server.
//   weft:sources                         SET   agents that have windows stored
//   weft:{SRC}:pairs                     SET   "proto|dst" of every pair of SRC ever stored
//   weft:{SRC}:hist:<proto>:<dst>        ZSET  score = window start (ns), member = window JSON
//   weft:{SRC}:latest:<proto>            HASH  dst -> window JSON (newest start seen, never moves back)
//   weft:{SRC}:latest_start:<proto>      HASH  dst -> that window's start, 20 digits (for the compare)
//   weft:{SRC}:seen                      STRING when SRC last reported (Unix ns)
//   weft:{agents}                        HASH  agent name -> its registration body as received
//   weft:{agents}:registered             HASH  agent name -> when it registered (Unix ns)
//   weft:{feed.N}                        STREAM what each replica took in (controller/redis_feed.hpp)
// Every write is idempotent (a window's JSON contains its start, so a resent window is the same
// ZSET member; latest only moves forward), which is what lets the connection redo a write whose
// outcome a lost connection or a failover left unknown, and lets several controllers share it.
#include <charconv>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <span>
#include <string_view>
#include <vector>

#include "base/log.hpp"
#include "controller/redis_conn.hpp"
#include "controller/redis_feed.hpp"
#include "controller/store.hpp"
#include "proto/report.hpp"

namespace weft::controller {
namespace {

using redis::Command;
using redis::Reply;

// A history read waits at most this long for the store (then the API answers from memory): well
// inside the 2 s a dashboard's drill-down may take, even when the read is the first to find a
// shard away.
constexpr std::chrono::milliseconds kReadPatience{800};

// Sets the latest hash (KEYS[1]) field DST to a window only if its start is not older than the one
// stored in the start hash (KEYS[2]). ARGV = DST, START, JSON, DST, START, JSON, ... with START
// zero-padded to 20 digits, so string order is number order (Lua numbers are doubles and would
// round nanosecond timestamps).
constexpr std::string_view kLatestScript = R"lua(
for i = 1, #ARGV, 3 do
  local cur = redis.call('HGET', KEYS[2], ARGV[i])
  if (not cur) or cur <= ARGV[i + 1] then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 2])
    redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
  end
end
return 0
)lua";

constexpr std::string_view kSources = "weft:sources";
constexpr std::string_view kAgents = "weft:{agents}";
constexpr std::string_view kAgentsRegistered = "weft:{agents}:registered";
constexpr std::string_view kAgentsPinglist = "weft:{agents}:pinglist";

std::string tag(std::string_view src) { return fmt::format("weft:{{{}}}", src); }
std::string hist_key(std::string_view src, std::string_view proto, std::string_view dst) {
  return fmt::format("weft:{{{}}}:hist:{}:{}", src, proto, dst);
}

std::string_view text(const redisReply* r) { return {r->str, static_cast<size_t>(r->len)}; }

// A reply that must be an array; its error (or a transport error) otherwise.
Result<Reply> array(Result<Reply> r, std::string_view what) {
  if (!r) return fail("redis {}: {}", what, r.error().message);
  if ((*r)->type == REDIS_REPLY_ERROR) return fail("redis {}: {}", what, text(r->get()));
  if ((*r)->type != REDIS_REPLY_ARRAY) return fail("redis {}: unexpected reply", what);
  return r;
}

class RedisStore final : public Store {
 public:
  // `poll_conn`: the feed is read on a connection of its own, so polling never waits for a write;
  // `read_conn` likewise for history reads (the API's drill-down never queues behind a write that
  // is retrying through a failover or an outage).
  RedisStore(std::unique_ptr<redis::Conn> conn, std::unique_ptr<redis::Conn> read_conn,
             std::unique_ptr<redis::Conn> poll_conn, redis::Feed feed)
      : conn_(std::move(conn)),
        read_conn_(std::move(read_conn)),
        poll_conn_(std::move(poll_conn)),
        feed_(std::move(feed)),
        write_patience_(conn_->retry_for()) {}

  Status append(const std::string& src, std::span<const proto::WindowStats> windows, int64_t received_ns,
                std::string_view encoded) override {
    if (windows.empty()) return {};
    std::lock_guard lk(mu_);
    pace(*conn_, write_patience_);
    if (auto st = track(append_locked(src, windows, received_ns)); !st) return st;
    publish(src, feed_.report(src, windows, received_ns, encoded));
    return {};
  }

  Result<std::vector<proto::WindowStats>> history(proto::Protocol protocol, const std::string& src,
                                                  const std::string& dst, int64_t since_ns, int64_t until_ns,
                                                  size_t limit) override {
    std::lock_guard lk(read_mu_);
    pace(*read_conn_, kReadPatience);
    std::string key = hist_key(src, proto::to_string(protocol), dst);
    // Newest `limit` in the range: reverse range with a limit, then put back in order.
    auto r = array(read_conn_->run(key, {"ZREVRANGEBYSCORE", key, "(" + std::to_string(until_ns),
                                         std::to_string(since_ns), "LIMIT", "0", std::to_string(limit)}),
                   "history");
    if (!r) return std::unexpected(r.error());
    std::vector<proto::WindowStats> out;
    for (size_t i = (*r)->elements; i-- > 0;) {
      auto w = proto::parse_window_json(text((*r)->element[i]));
      if (!w) return fail("redis history: corrupt member in {}: {}", key, w.error().message);
      out.push_back(std::move(*w));
    }
    return out;
  }

  Status load_recent(int64_t since_ns, const RestoreFn& fn) override {
    std::lock_guard lk(mu_);
    auto sources = array(conn_->run(kSources, {"SMEMBERS", std::string(kSources)}), "load");
    if (!sources) return std::unexpected(sources.error());
    std::string lo = std::to_string(since_ns);
    for (size_t i = 0; i < (*sources)->elements; ++i) {
      std::string src(text((*sources)->element[i]));
      std::string pairs_key = tag(src) + ":pairs";
      auto pairs = array(conn_->run(pairs_key, {"SMEMBERS", pairs_key}), "load");
      if (!pairs) return std::unexpected(pairs.error());
      std::vector<proto::WindowStats> ws;
      for (size_t k = 0; k < (*pairs)->elements; ++k) {
        std::string_view p = text((*pairs)->element[k]);
        auto bar = p.find('|');
        if (bar == std::string_view::npos) continue;
        std::string key = hist_key(src, p.substr(0, bar), p.substr(bar + 1));
        auto r = array(conn_->run(key, {"ZRANGEBYSCORE", key, lo, "+inf"}), "load");
        if (!r) return std::unexpected(r.error());
        for (size_t m = 0; m < (*r)->elements; ++m)
          if (auto w = proto::parse_window_json(text((*r)->element[m]))) ws.push_back(std::move(*w));
      }
      int64_t seen_ns = 0;
      std::string seen_key = tag(src) + ":seen";
      if (auto seen = conn_->run(seen_key, {"GET", seen_key}); seen && (*seen)->type == REDIS_REPLY_STRING)
        std::from_chars((*seen)->str, (*seen)->str + (*seen)->len, seen_ns);
      std::stable_sort(ws.begin(), ws.end(),
                       [](const auto& x, const auto& y) { return x.start_unix_ns < y.start_unix_ns; });
      fn(src, ws, seen_ns);
    }
    return {};
  }

  Status save_registration(const std::string& name, std::string_view registration,
                           int64_t received_ns) override {
    std::lock_guard lk(mu_);
    pace(*conn_, write_patience_);
    // Both hashes share the {agents} tag: one MULTI/EXEC, so no other client sees one without
    // the other. (Redis does not roll back: if one fails when EXEC runs it, the write is reported
    // failed, the agent is answered 503 and registers again.)
    std::vector<Command> cmds{{"HSET", std::string(kAgents), name, std::string(registration)},
                              {"HSET", std::string(kAgentsRegistered), name, std::to_string(received_ns)}};
    if (auto st = track(conn_->transaction(kAgents, cmds, "register")); !st) return st;
    publish(name, feed_.registration(name, registration, received_ns));
    return {};
  }

  Status remove_registration(const std::string& name) override {
    std::lock_guard lk(mu_);
    pace(*conn_, write_patience_);
    std::vector<Command> cmds{{"HDEL", std::string(kAgents), name},
                              {"HDEL", std::string(kAgentsRegistered), name},
                              {"HDEL", std::string(kAgentsPinglist), name}};
    if (auto st = conn_->transaction(kAgents, cmds, "unregister"); !st) return track(st);
    std::string seen_key = tag(name) + ":seen";
    auto r = conn_->run(seen_key, {"DEL", seen_key});
    if (!r) return track(fail("redis unregister: {}", r.error().message));
    publish(name, feed_.removal(name));
    return track({});
  }

  Status load_registrations(const RegistrationFn& fn) override {
    std::lock_guard lk(mu_);
    auto regs = array(conn_->run(kAgents, {"HGETALL", std::string(kAgents)}), "load registrations");
    if (!regs) return std::unexpected(regs.error());
    auto times =
        array(conn_->run(kAgents, {"HGETALL", std::string(kAgentsRegistered)}), "load registrations");
    if (!times) return std::unexpected(times.error());
    std::map<std::string, int64_t, std::less<>> registered;
    for (size_t i = 0; i + 1 < (*times)->elements; i += 2) {
      int64_t ns = 0;
      auto t = text((*times)->element[i + 1]);
      std::from_chars(t.data(), t.data() + t.size(), ns);
      registered[std::string(text((*times)->element[i]))] = ns;
    }
    for (size_t i = 0; i + 1 < (*regs)->elements; i += 2) {
      auto it = registered.find(text((*regs)->element[i]));
      fn(text((*regs)->element[i + 1]), it == registered.end() ? 0 : it->second);
    }
    return {};
  }

  Status apply_retention(int64_t before_ns) override {
    std::lock_guard lk(mu_);
    pace(*conn_, write_patience_);
    auto sources = array(conn_->run(kSources, {"SMEMBERS", std::string(kSources)}), "retention");
    if (!sources) return std::unexpected(sources.error());
    std::string hi = "(" + std::to_string(before_ns);
    for (size_t i = 0; i < (*sources)->elements; ++i) {
      std::string src(text((*sources)->element[i]));
      std::string pairs_key = tag(src) + ":pairs";
      auto pairs = array(conn_->run(pairs_key, {"SMEMBERS", pairs_key}), "retention");
      if (!pairs) return std::unexpected(pairs.error());
      for (size_t k = 0; k < (*pairs)->elements; ++k) {
        std::string_view p = text((*pairs)->element[k]);
        auto bar = p.find('|');
        if (bar == std::string_view::npos) continue;
        std::string key = hist_key(src, p.substr(0, bar), p.substr(bar + 1));
        auto r = conn_->run(key, {"ZREMRANGEBYSCORE", key, "-inf", hi});
        if (!r) return fail("redis retention: {}", r.error().message);
      }
    }
    return {};
  }

  // Never waits for a write in progress (/healthz, /metrics and the pinglist handler ask).
  StoreInfo info() const override {
    std::lock_guard lk(state_mu_);
    return {conn_->cluster() ? "redis-cluster" : "redis", conn_->spec(), last_error_.empty(), last_error_};
  }

  bool shared() const override { return true; }

  // Not while the store's last write failed: a report without windows (which touches no key) must
  // not wait out a cluster's retries for a best-effort note; the next report after recovery sends it.
  void publish_agent_state(const std::string& agent, std::string_view state, int64_t received_ns) override {
    std::lock_guard lk(mu_);
    if (healthy()) publish(agent, feed_.agent_state(agent, state, received_ns));
  }

  // Tried also while the last write failed (unlike the agent state): a change is rare, and the
  // caller keeps it until this succeeds. Its outcome is the store's state, like a write's.
  Status publish_pinglist(const std::string& agent, uint64_t version, uint64_t targets) override {
    std::lock_guard lk(mu_);
    pace(*conn_, write_patience_);
    auto r = conn_->run(
        kAgents, {"HSET", std::string(kAgentsPinglist), agent, fmt::format("{} {}", version, targets)});
    if (!r) return track(fail("redis pinglist: {}", r.error().message));
    if ((*r)->type == REDIS_REPLY_ERROR) return track(fail("redis pinglist: {}", text(r->get())));
    if (!publish(agent, feed_.pinglist(agent, version, targets)))
      return fail("redis pinglist: not published to the replica feed");
    return track({});
  }

  Status load_pinglists(const PinglistFn& fn) override {
    std::lock_guard lk(mu_);
    auto all = array(conn_->run(kAgents, {"HGETALL", std::string(kAgentsPinglist)}), "load pinglists");
    if (!all) return std::unexpected(all.error());
    for (size_t i = 0; i + 1 < (*all)->elements; i += 2) {
      // "VERSION TARGETS", as the feed's pinglist entry (redis_feed.cpp)
      const std::string_view v = text((*all)->element[i + 1]);
      const size_t sp = v.find(' ');
      uint64_t version = 0, targets = 0;
      if (sp == std::string_view::npos ||
          std::from_chars(v.data(), v.data() + sp, version).ec != std::errc() ||
          std::from_chars(v.data() + sp + 1, v.data() + v.size(), targets).ec != std::errc())
        continue;
      fn(std::string(text((*all)->element[i])), version, targets);
    }
    return {};
  }

  Result<size_t> poll_peers(const PeerEventFn& fn) override {
    std::lock_guard lk(poll_mu_);
    return feed_.poll(*poll_conn_, fn);
  }

 private:
  // A write's outcome is what /healthz and weft_controller_store_up report.
  Status track(Status st) {
    std::lock_guard lk(state_mu_);
    last_error_ = st ? std::string() : st.error().message;
    return st;
  }

  bool healthy() const {
    std::lock_guard lk(state_mu_);
    return last_error_.empty();
  }

  // While the last write failed, calls make one attempt each and do not retry: an outage (a shard
  // away with no replica to take over, a server down) would otherwise cost every report and read
  // the whole retry time, one after the other under the lock, and agents would wait on the
  // controller for many seconds. The first call to find the store away waits its patience out (a
  // failover is ridden through); the first that succeeds makes the store healthy again.
  void pace(redis::Conn& c, std::chrono::milliseconds patience) const {
    c.set_retry_for(healthy() ? patience : std::chrono::milliseconds(0));
  }

  Status append_locked(const std::string& src, std::span<const proto::WindowStats> windows,
                       int64_t received_ns) {
    // The agent's name goes into the global index first (idempotent, once per process and agent):
    // if the report's transaction then fails, a listed agent without windows is harmless.
    if (!sources_known_.contains(src)) {
      auto r = conn_->run(kSources, {"SADD", std::string(kSources), src});
      if (!r) return fail("redis append: {}", r.error().message);
      if ((*r)->type == REDIS_REPLY_ERROR) return fail("redis append: {}", text(r->get()));
      sources_known_.insert(src);
    }
    std::string t = tag(src);
    std::vector<Command> cmds;
    std::set<std::string> pairs;
    std::map<std::pair<int, std::string>, const proto::WindowStats*> newest;  // (proto, dst) -> window
    for (const auto& w : windows) {
      std::string proto = proto::to_string(w.protocol);
      cmds.push_back(
          {"ZADD", hist_key(src, proto, w.target), std::to_string(w.start_unix_ns), proto::window_json(w)});
      pairs.insert(proto + "|" + w.target);
      auto& n = newest[{static_cast<int>(w.protocol), w.target}];
      if (!n || w.start_unix_ns > n->start_unix_ns) n = &w;
    }
    Command sadd{"SADD", t + ":pairs"};
    sadd.insert(sadd.end(), pairs.begin(), pairs.end());
    cmds.push_back(std::move(sadd));
    // latest only moves forward: a late out-of-order window (or a second controller writing an
    // older one) must not replace a newer one, so the compare happens inside Redis (one script call
    // per protocol, inside the same MULTI).
    for (auto proto : {proto::Protocol::udp, proto::Protocol::tcp, proto::Protocol::rdma}) {
      Command eval{"EVAL", std::string(kLatestScript), "2",
                   fmt::format("{}:latest:{}", t, proto::to_string(proto)),
                   fmt::format("{}:latest_start:{}", t, proto::to_string(proto))};
      for (const auto& [k, w] : newest) {
        if (w->protocol != proto) continue;
        eval.push_back(w->target);
        eval.push_back(fmt::format("{:020d}", w->start_unix_ns));  // fixed width: compares as a string
        eval.push_back(proto::window_json(*w));
      }
      if (eval.size() > 5) cmds.push_back(std::move(eval));
    }
    // When the agent was last heard from: a restarted controller keeps agents that were alive up
    // (and their peers' pinglists unchanged) instead of waiting for each to report again.
    cmds.push_back({"SET", t + ":seen", std::to_string(received_ns)});
    return conn_->transaction(t, cmds, "append");
  }

  // After the write succeeded (mu_ held, so one agent's events go out in the order they were
  // stored). Best effort: the write is durable, the other replicas catch up with the agent's next
  // report (redis_feed.hpp).
  bool publish(const std::string& agent, const redis::Command& cmd) {
    auto r = conn_->run(redis::Feed::stream_of(agent), cmd);
    std::string_view err = !r                                ? std::string_view(r.error().message)
                           : (*r)->type == REDIS_REPLY_ERROR ? text(r->get())
                                                             : std::string_view();
    if (err.empty()) return true;
    if (feed_errors_++ % 100 == 0)
      log().warn("redis feed: publishing {}'s update to the other replicas failed ({} so far): {}", agent,
                 feed_errors_, err);
    return false;
  }

  std::unique_ptr<redis::Conn> conn_;       // writes and start-up loads (mu_)
  std::unique_ptr<redis::Conn> read_conn_;  // history reads (read_mu_)
  std::unique_ptr<redis::Conn> poll_conn_;  // the replica feed (poll_mu_)
  redis::Feed feed_;
  const std::chrono::milliseconds write_patience_;
  std::mutex poll_mu_;
  std::mutex read_mu_;
  uint64_t feed_errors_ = 0;
  mutable std::mutex mu_;
  mutable std::mutex state_mu_;  // last_error_ only: info() never waits for a write
  std::string last_error_;
  std::set<std::string, std::less<>> sources_known_;
};

}  // namespace

Result<std::unique_ptr<Store>> open_redis_store(const std::string& spec, const redis::TlsFiles& tls) {
  redis::ConnOptions options;
  options.tls = tls;
  auto conn = redis::Conn::open(spec, options);
  if (!conn) return std::unexpected(conn.error());
  auto poll_conn = redis::Conn::open(spec, options);
  if (!poll_conn) return std::unexpected(poll_conn.error());
  auto read_conn = redis::Conn::open(spec, options);
  if (!read_conn) return std::unexpected(read_conn.error());
  // A random name for this controller's feed entries (its own are skipped when it reads).
  std::random_device rd;
  redis::Feed feed(fmt::format("{:08x}{:08x}", rd(), rd()));
  if (auto st = feed.start(**poll_conn); !st)
    return std::unexpected(
        Error{fmt::format("redis store {}: {}", (*poll_conn)->spec(), st.error().message), st.error().code});
  return std::unique_ptr<Store>(std::make_unique<RedisStore>(std::move(*conn), std::move(*read_conn),
                                                             std::move(*poll_conn), std::move(feed)));
}

}  // namespace weft::controller
