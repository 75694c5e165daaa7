// The Redis store (keys documented in docs/store-redis.md):
//   weft:pairs                         SET   "proto|src|dst" of every pair ever stored
//   weft:latest:<proto>:<src>          HASH  dst -> window JSON (newest start seen, never moves back)
//   weft:latest_start:<proto>:<src>    HASH  dst -> that window's start, 20 digits (for the compare)
//   weft:hist:<proto>:<src>:<dst>      ZSET  score = window start (ns), member = window JSON
//   weft:agents                        HASH  agent name -> its registration body as received
//   weft:agents_registered             HASH  agent name -> when it registered (Unix ns)
// A batch is written in one MULTI/EXEC, so it is stored entirely or not at all. The window JSON
// contains its start, so a resent window is the same member and cannot be counted twice even by
// another controller sharing the Redis.
#include <hiredis/hiredis.h>

#include <charconv>
#include <map>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "base/log.hpp"
#include "controller/store.hpp"
#include "net/address.hpp"
#include "proto/report.hpp"

namespace weft::controller {
namespace {

// Sets weft:latest (KEYS[1]) field DST to a window only if its start is not older than the one
// stored in weft:latest_start (KEYS[2]). ARGV = DST, START, JSON, DST, START, JSON, ... with START
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

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

class RedisStore final : public Store {
 public:
  explicit RedisStore(std::string spec) : spec_(std::move(spec)) {}
  ~RedisStore() override {
    if (ctx_) redisFree(ctx_);
  }

  Status connect() {
    if (ctx_) {
      redisFree(ctx_);
      ctx_ = nullptr;
    }
    timeval tv{2, 0};
    if (spec_.starts_with("redis+unix://")) {
      std::string path = spec_.substr(13);
      ctx_ = redisConnectUnixWithTimeout(path.c_str(), tv);
    } else {
      std::string hp = spec_.substr(8);
      if (auto slash = hp.find('/'); slash != std::string::npos) hp.resize(slash);
      auto host_port = net::split_host_port(hp, 6379);
      if (!host_port) return fail("redis store '{}': {}", spec_, host_port.error().message);
      ctx_ = redisConnectWithTimeout(host_port->first.c_str(), host_port->second, tv);
    }
    if (!ctx_ || ctx_->err) {
      std::string e = ctx_ ? ctx_->errstr : "out of memory";
      return fail("redis store {}: {}", spec_, e);
    }
    redisSetTimeout(ctx_, timeval{5, 0});
    Reply r(static_cast<redisReply*>(redisCommand(ctx_, "PING")));
    if (!r || r->type == REDIS_REPLY_ERROR)
      return fail("redis store {}: PING failed: {}", spec_, r ? r->str : ctx_->errstr);
    return {};
  }

  Status append(const std::string& src, std::span<const proto::WindowStats> windows, int64_t received_ns,
                std::string_view) override {
    if (windows.empty()) return {};
    std::lock_guard lk(mu_);
    return write_locked([&] { return append_locked(src, windows, received_ns); });
  }

  Result<std::vector<proto::WindowStats>> history(proto::Protocol protocol, const std::string& src,
                                                  const std::string& dst, int64_t since_ns, int64_t until_ns,
                                                  size_t limit) override {
    std::lock_guard lk(mu_);
    if (auto st = ensure(); !st) return std::unexpected(st.error());
    std::string key = fmt::format("weft:hist:{}:{}:{}", proto::to_string(protocol), src, dst);
    std::string lo = std::to_string(since_ns), hi = "(" + std::to_string(until_ns);
    // Newest `limit` in the range: reverse range with a limit, then put back in order.
    Reply r(static_cast<redisReply*>(redisCommand(ctx_, "ZREVRANGEBYSCORE %b %b %b LIMIT 0 %lld", key.data(),
                                                  key.size(), hi.data(), hi.size(), lo.data(), lo.size(),
                                                  static_cast<long long>(limit))));
    if (!r || r->type != REDIS_REPLY_ARRAY)
      return fail("redis history: {}", r ? (r->str ? r->str : "bad reply") : ctx_->errstr);
    std::vector<proto::WindowStats> out;
    for (size_t i = r->elements; i-- > 0;) {
      auto w = proto::parse_window_json(std::string_view(r->element[i]->str, r->element[i]->len));
      if (!w) return fail("redis history: corrupt member in {}: {}", key, w.error().message);
      out.push_back(std::move(*w));
    }
    return out;
  }

  Status load_recent(int64_t since_ns, const RestoreFn& fn) override {
    std::lock_guard lk(mu_);
    if (auto st = ensure(); !st) return st;
    Reply pairs(static_cast<redisReply*>(redisCommand(ctx_, "SMEMBERS weft:pairs")));
    if (!pairs || pairs->type != REDIS_REPLY_ARRAY) return fail("redis load: SMEMBERS weft:pairs failed");
    std::map<std::string, std::vector<proto::WindowStats>> by_src;
    std::string lo = std::to_string(since_ns);
    for (size_t i = 0; i < pairs->elements; ++i) {
      std::string p(pairs->element[i]->str, pairs->element[i]->len);
      auto a = p.find('|'), b = p.rfind('|');
      if (a == std::string::npos || a == b) continue;
      std::string key =
          fmt::format("weft:hist:{}:{}:{}", p.substr(0, a), p.substr(a + 1, b - a - 1), p.substr(b + 1));
      Reply r(static_cast<redisReply*>(
          redisCommand(ctx_, "ZRANGEBYSCORE %b %b +inf", key.data(), key.size(), lo.data(), lo.size())));
      if (!r || r->type != REDIS_REPLY_ARRAY) return fail("redis load: ZRANGEBYSCORE {} failed", key);
      auto& v = by_src[p.substr(a + 1, b - a - 1)];
      for (size_t k = 0; k < r->elements; ++k) {
        auto w = proto::parse_window_json(std::string_view(r->element[k]->str, r->element[k]->len));
        if (w) v.push_back(std::move(*w));
      }
    }
    Reply seen(static_cast<redisReply*>(redisCommand(ctx_, "HGETALL weft:agents_seen")));
    std::map<std::string, int64_t, std::less<>> seen_ns;
    if (seen && seen->type == REDIS_REPLY_ARRAY)
      for (size_t i = 0; i + 1 < seen->elements; i += 2) {
        int64_t v = 0;
        std::string_view t(seen->element[i + 1]->str, seen->element[i + 1]->len);
        std::from_chars(t.data(), t.data() + t.size(), v);
        seen_ns[std::string(seen->element[i]->str, seen->element[i]->len)] = v;
      }
    for (auto& [src, ws] : by_src) {
      std::stable_sort(ws.begin(), ws.end(),
                       [](const auto& x, const auto& y) { return x.start_unix_ns < y.start_unix_ns; });
      auto it = seen_ns.find(src);
      fn(src, ws, it == seen_ns.end() ? 0 : it->second);
    }
    return {};
  }

  Status save_registration(const std::string& name, std::string_view registration,
                           int64_t received_ns) override {
    std::lock_guard lk(mu_);
    return write_locked([&] { return save_registration_locked(name, registration, received_ns); });
  }

  Status remove_registration(const std::string& name) override {
    std::lock_guard lk(mu_);
    return write_locked([&]() -> Status {
      if (auto st = ensure(); !st) return st;
      redisAppendCommand(ctx_, "MULTI");
      for (const char* h : {"weft:agents", "weft:agents_registered", "weft:agents_seen"})
        redisAppendCommand(ctx_, "HDEL %s %b", h, name.data(), name.size());
      redisAppendCommand(ctx_, "EXEC");
      return read_transaction(5, "unregister");
    });
  }

  Status load_registrations(const RegistrationFn& fn) override {
    std::lock_guard lk(mu_);
    if (auto st = ensure(); !st) return st;
    Reply regs(static_cast<redisReply*>(redisCommand(ctx_, "HGETALL weft:agents")));
    if (!regs || regs->type != REDIS_REPLY_ARRAY) return fail("redis load: HGETALL weft:agents failed");
    Reply times(static_cast<redisReply*>(redisCommand(ctx_, "HGETALL weft:agents_registered")));
    if (!times || times->type != REDIS_REPLY_ARRAY)
      return fail("redis load: HGETALL weft:agents_registered failed");
    std::map<std::string, int64_t, std::less<>> registered;
    for (size_t i = 0; i + 1 < times->elements; i += 2) {
      int64_t ns = 0;
      std::from_chars(times->element[i + 1]->str, times->element[i + 1]->str + times->element[i + 1]->len,
                      ns);
      registered[std::string(times->element[i]->str, times->element[i]->len)] = ns;
    }
    for (size_t i = 0; i + 1 < regs->elements; i += 2) {
      auto it = registered.find(std::string_view(regs->element[i]->str, regs->element[i]->len));
      fn(std::string_view(regs->element[i + 1]->str, regs->element[i + 1]->len),
         it == registered.end() ? 0 : it->second);
    }
    return {};
  }

  Status apply_retention(int64_t before_ns) override {
    std::lock_guard lk(mu_);
    if (auto st = ensure(); !st) return st;
    Reply pairs(static_cast<redisReply*>(redisCommand(ctx_, "SMEMBERS weft:pairs")));
    if (!pairs || pairs->type != REDIS_REPLY_ARRAY) return fail("redis retention: SMEMBERS failed");
    std::string hi = "(" + std::to_string(before_ns);
    for (size_t i = 0; i < pairs->elements; ++i) {
      std::string p(pairs->element[i]->str, pairs->element[i]->len);
      auto a = p.find('|'), b = p.rfind('|');
      if (a == std::string::npos || a == b) continue;
      std::string key =
          fmt::format("weft:hist:{}:{}:{}", p.substr(0, a), p.substr(a + 1, b - a - 1), p.substr(b + 1));
      Reply r(static_cast<redisReply*>(
          redisCommand(ctx_, "ZREMRANGEBYSCORE %b -inf %b", key.data(), key.size(), hi.data(), hi.size())));
      if (!r) return fail("redis retention: {}", ctx_->errstr);
    }
    return {};
  }

  StoreInfo info() const override {
    std::lock_guard lk(mu_);
    return {"redis", spec_, last_error_.empty(), last_error_};
  }

 private:
  Status ensure() {
    if (ctx_ && !ctx_->err) return {};
    return connect();
  }

  // A write, retried once on a new connection if the connection failed; its outcome is what
  // /healthz and weft_controller_store_up report.
  template <typename Write>
  Status write_locked(Write&& write) {
    auto st = write();
    if (!st && ctx_ && ctx_->err) {  // connection trouble: one reconnect, then one more try
      if (connect()) st = write();
    }
    last_error_ = st ? std::string() : st.error().message;
    return st;
  }

  // Reads the replies of `queued` pipelined commands that end with MULTI ... EXEC: the first
  // error of any of them, an aborted transaction (EXEC not an array), or an error inside EXEC's
  // results (a command that failed when it ran, e.g. WRONGTYPE) fails the write.
  Status read_transaction(size_t queued, const char* what) {
    std::string err;
    for (size_t i = 0; i < queued; ++i) {
      redisReply* raw = nullptr;
      if (redisGetReply(ctx_, reinterpret_cast<void**>(&raw)) != REDIS_OK)
        return fail("redis {}: {}", what, ctx_->errstr);
      Reply r(raw);
      if (i + 1 == queued) {
        if (r->type != REDIS_REPLY_ARRAY) err = err.empty() ? "transaction aborted" : err;
        for (size_t k = 0; r->type == REDIS_REPLY_ARRAY && k < r->elements && err.empty(); ++k)
          if (r->element[k]->type == REDIS_REPLY_ERROR)
            err = std::string(r->element[k]->str, r->element[k]->len);
      } else if (r->type == REDIS_REPLY_ERROR && err.empty()) {
        err = std::string(r->str, r->len);
      }
    }
    if (!err.empty()) return fail("redis {}: {}", what, err);
    return {};
  }

  // Both hashes in one MULTI/EXEC, so no other client sees one without the other. (Redis does not
  // roll back: if one fails when EXEC runs it, the write is reported failed, the agent is answered
  // 503 and registers again.)
  Status save_registration_locked(const std::string& name, std::string_view registration,
                                  int64_t received_ns) {
    if (auto st = ensure(); !st) return st;
    std::string ns = std::to_string(received_ns);
    redisAppendCommand(ctx_, "MULTI");
    redisAppendCommand(ctx_, "HSET weft:agents %b %b", name.data(), name.size(), registration.data(),
                       registration.size());
    redisAppendCommand(ctx_, "HSET weft:agents_registered %b %b", name.data(), name.size(), ns.data(),
                       ns.size());
    redisAppendCommand(ctx_, "EXEC");
    return read_transaction(4, "register");
  }

  Status append_locked(const std::string& src, std::span<const proto::WindowStats> windows,
                       int64_t received_ns) {
    if (auto st = ensure(); !st) return st;
    size_t queued = 0;
    auto cmd_argv = [&](std::span<const std::string_view> args) {
      std::vector<const char*> argv;
      std::vector<size_t> lens;
      for (auto a : args) {
        argv.push_back(a.data());
        lens.push_back(a.size());
      }
      redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lens.data());
      ++queued;
    };
    auto cmd = [&](std::initializer_list<std::string_view> args) {
      cmd_argv(std::span(args.begin(), args.size()));
    };
    cmd({"MULTI"});
    std::map<std::pair<int, std::string>, const proto::WindowStats*> newest;  // (proto, dst) -> window
    for (const auto& w : windows) {
      std::string proto = proto::to_string(w.protocol);
      std::string key = fmt::format("weft:hist:{}:{}:{}", proto, src, w.target);
      std::string member = proto::window_json(w);
      std::string score = std::to_string(w.start_unix_ns);
      cmd({"ZADD", key, score, member});
      cmd({"SADD", "weft:pairs", fmt::format("{}|{}|{}", proto, src, w.target)});
      auto& n = newest[{static_cast<int>(w.protocol), w.target}];
      if (!n || w.start_unix_ns > n->start_unix_ns) n = &w;
    }
    // weft:latest only moves forward: a late out-of-order window (or a second controller writing an
    // older one) must not replace a newer one, so the compare happens inside Redis (one script call
    // per protocol, inside the same MULTI).
    std::vector<std::string> args;  // owns the strings the argv below points into
    for (auto proto : {proto::Protocol::udp, proto::Protocol::tcp, proto::Protocol::rdma}) {
      args.clear();
      for (const auto& [k, w] : newest) {
        if (w->protocol != proto) continue;
        args.push_back(w->target);
        args.push_back(fmt::format("{:020d}", w->start_unix_ns));  // fixed width: compares as a string
        args.push_back(proto::window_json(*w));
      }
      if (args.empty()) continue;
      std::string latest = fmt::format("weft:latest:{}:{}", proto::to_string(proto), src);
      std::string starts = fmt::format("weft:latest_start:{}:{}", proto::to_string(proto), src);
      std::vector<std::string_view> argv{"EVAL", kLatestScript, "2", latest, starts};
      argv.insert(argv.end(), args.begin(), args.end());
      cmd_argv(argv);
    }
    // When the agent was last heard from: a restarted controller keeps agents that were alive up
    // (and their peers' pinglists unchanged) instead of waiting for each to report again.
    cmd({"HSET", "weft:agents_seen", src, std::to_string(received_ns)});
    cmd({"EXEC"});
    return read_transaction(queued, "append");
  }

  std::string spec_;
  mutable std::mutex mu_;
  redisContext* ctx_ = nullptr;
  std::string last_error_;
};

}  // namespace

Result<std::unique_ptr<Store>> open_redis_store(const std::string& spec) {
  auto s = std::make_unique<RedisStore>(spec);
  if (auto st = s->connect(); !st) return std::unexpected(st.error());
  return std::unique_ptr<Store>(std::move(s));
}

}  // namespace weft::controller
