#include "controller/redis_conn.hpp"

#include <set>
#include <thread>

#include "base/signals.hpp"
#include "controller/store.hpp"
#include "net/address.hpp"

namespace weft::controller::redis {
namespace {

using Clock = std::chrono::steady_clock;

std::string_view error_text(const redisReply& r) { return {r.str, static_cast<size_t>(r.len)}; }

// A failure that waiting may cure (refused, timed out, lost connection, cluster down), as opposed
// to a wrong URL or password: the controller's start-up retries the first kind only.
unexpected<Error> unreachable(std::string message) {
  return unexpected(Error{std::move(message), kStoreUnreachable});
}

// Errors that mean "this node cannot answer for the slot right now": the cluster is failing over
// (CLUSTERDOWN), a slot is being migrated (TRYAGAIN), or the node just lost its master role
// (READONLY / MASTERDOWN on a former master now a replica).
bool transient(std::string_view e) {
  return e.starts_with("CLUSTERDOWN") || e.starts_with("TRYAGAIN") || e.starts_with("READONLY") ||
         e.starts_with("MASTERDOWN") || e.starts_with("LOADING");
}

void append_argv(redisContext* c, const Command& cmd) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  argv.reserve(cmd.size());
  lens.reserve(cmd.size());
  for (const auto& a : cmd) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  redisAppendCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data());
}

}  // namespace

namespace {
// %XX escapes in a URL's user name or password; an incomplete or non-hex escape is an error.
Result<std::string> percent_decoded(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    auto hex = [](char ch) { return isxdigit(static_cast<unsigned char>(ch)) != 0; };
    if (i + 2 >= s.size() || !hex(s[i + 1]) || !hex(s[i + 2])) return fail("a '%' escape is not %XX");
    out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
    i += 2;
  }
  return out;
}
}  // namespace

Result<Conn::Credentials> Conn::split_credentials(const std::string& spec) {
  Credentials out{{}, {}, spec, spec};
  const size_t scheme = spec.find("://");
  if (scheme == std::string::npos) return out;
  const size_t start = scheme + 3;
  const size_t end = std::min(spec.find('/', start), spec.size());
  const size_t at = spec.rfind('@', end == spec.size() ? std::string::npos : end);
  if (at == std::string::npos || at < start) return out;
  std::string_view info(spec.data() + start, at - start);
  const size_t colon = info.find(':');
  auto user = percent_decoded(info.substr(0, colon));
  auto pass = percent_decoded(colon == std::string_view::npos ? std::string_view() : info.substr(colon + 1));
  const std::string scheme_part = spec.substr(0, start), rest = spec.substr(at + 1);
  if (!user || !pass)
    return fail("redis store '{}***@{}': credentials: {}", scheme_part, rest,
                (!user ? user.error() : pass.error()).message);
  if (colon == std::string_view::npos || pass->empty())
    return fail("redis store '{}***@{}': expected USER:PASSWORD@ or :PASSWORD@ before the host", scheme_part,
                rest);
  out.user = std::move(*user);
  out.password = std::move(*pass);
  out.bare = scheme_part + rest;
  out.shown = scheme_part + (out.user.empty() ? "" : out.user) + ":***@" + rest;
  return out;
}

Result<std::unique_ptr<Conn>> Conn::open(const std::string& raw_spec, ConnOptions options) {
  auto creds = split_credentials(raw_spec);
  if (!creds) return std::unexpected(creds.error());
  const std::string& spec = creds->bare;  // parsed below; errors name creds->shown
  std::unique_ptr<Conn> c(new Conn(creds->shown, options));
  c->user_ = creds->user;
  c->password_ = creds->password;
  std::string_view scheme_rest = spec;
  if (spec.starts_with("rediss://") || spec.starts_with("rediss-cluster://")) {
    auto tls = TlsClientContext::load(options.tls);
    if (!tls) return fail("redis store {}: {}", c->spec_, tls.error().message);
    c->tls_ = std::move(*tls);
    scheme_rest.remove_prefix(1);  // "rediss..." is parsed as "edis...": the same from here
  } else if (!options.tls.ca.empty() || !options.tls.cert.empty()) {
    return fail("redis store {}: store_ca/store_cert are for TLS stores: use rediss:// or rediss-cluster://",
                c->spec_);
  }
  if (scheme_rest.starts_with("redis-cluster://") || scheme_rest.starts_with("ediss-cluster://")) {
    c->cluster_ = true;
    std::string_view rest = scheme_rest.substr(scheme_rest.find("://") + 3);
    if (auto slash = rest.find('/'); slash != std::string_view::npos) rest = rest.substr(0, slash);
    while (!rest.empty()) {
      auto comma = rest.find(',');
      auto one = rest.substr(0, comma);
      auto hp = net::split_host_port(one, 6379);
      if (!hp) return fail("redis store '{}': {}", c->spec_, hp.error().message);
      std::string host = hp->first.find(':') != std::string::npos ? "[" + hp->first + "]" : hp->first;
      c->seeds_.push_back(host + ":" + std::to_string(hp->second));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    if (c->seeds_.empty()) return fail("redis store '{}': no cluster node given", c->spec_);
    if (auto st = c->refresh_slots(); !st)
      return unexpected(
          Error{fmt::format("redis store {}: {}", c->spec_, st.error().message), st.error().code});
    return c;
  }
  if (spec.starts_with("redis+unix://")) {
    c->single_ = "unix:" + spec.substr(13);
  } else if (scheme_rest.starts_with("redis://") || scheme_rest.starts_with("ediss://")) {
    std::string hp(scheme_rest.substr(scheme_rest.find("://") + 3));
    if (auto slash = hp.find('/'); slash != std::string::npos) hp.resize(slash);
    auto host_port = net::split_host_port(hp, 6379);
    if (!host_port) return fail("redis store '{}': {}", c->spec_, host_port.error().message);
    std::string host =
        host_port->first.find(':') != std::string::npos ? "[" + host_port->first + "]" : host_port->first;
    c->single_ = host + ":" + std::to_string(host_port->second);
  } else {
    return fail(
        "redis store '{}': expected redis://, rediss://, redis+unix://, redis-cluster:// or "
        "rediss-cluster://",
        c->spec_);
  }
  auto pong = c->run("", {"PING"});
  if (!pong)
    return unexpected(
        Error{fmt::format("redis store {}: {}", c->spec_, pong.error().message), pong.error().code});
  if ((*pong)->type == REDIS_REPLY_ERROR && transient(error_text(**pong)))
    return unreachable(fmt::format("redis store {}: PING failed: {}", c->spec_, error_text(**pong)));
  if ((*pong)->type == REDIS_REPLY_ERROR)
    return fail(
        "redis store {}: PING failed: {}{}", c->spec_, error_text(**pong),
        error_text(**pong).starts_with("NOAUTH") ? " (give the password: redis://:PASSWORD@HOST:PORT)" : "");
  return c;
}

Conn::~Conn() {
  while (!conns_.empty()) drop(conns_.begin()->first);
}

Result<redisContext*> Conn::node(const std::string& address) {
  if (auto it = conns_.find(address); it != conns_.end()) {
    if (!it->second->err) return it->second;
    drop(address);
  }
  timeval connect_timeout{1, 0};
  redisContext* ctx = nullptr;
  std::unique_ptr<TlsTunnel> tunnel;
  if (address.starts_with("unix:")) {
    ctx = redisConnectUnixWithTimeout(address.c_str() + 5, connect_timeout);
  } else {
    auto hp = net::split_host_port(address, 6379);
    if (!hp) return fail("{}: {}", address, hp.error().message);
    if (tls_) {
      auto t = TlsTunnel::open(tls_, hp->first, hp->second, std::chrono::seconds(1));
      if (!t) return std::unexpected(t.error());
      tunnel = std::move(*t);
      ctx = redisConnectFd(tunnel->release_plain_fd());
    } else {
      ctx = redisConnectWithTimeout(hp->first.c_str(), hp->second, connect_timeout);
    }
  }
  if (!ctx || ctx->err) {
    std::string e = ctx ? ctx->errstr : "out of memory";
    if (ctx) redisFree(ctx);
    return unreachable(fmt::format("{}: {}", address, e));
  }
  redisSetTimeout(ctx, timeval{5, 0});
  if (!password_.empty()) {
    const SigpipeBlock no_sigpipe;  // hiredis write()s: a server that hung up is an EPIPE (see run_once)
    // AUTH before anything else; ACL users (Redis 6+) name themselves, requirepass does not.
    std::vector<std::string> auth{"AUTH"};
    if (!user_.empty()) auth.push_back(user_);
    auth.push_back(password_);
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const auto& a : auth) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    Reply r(static_cast<redisReply*>(
        redisCommandArgv(ctx, static_cast<int>(argv.size()), argv.data(), lens.data())));
    if (!r || r->type == REDIS_REPLY_ERROR) {
      std::string e = r ? std::string(error_text(*r)) : std::string(ctx->errstr);
      redisFree(ctx);  // closes hiredis's end: the tunnel (if any) ends with it
      if (tunnel && !tunnel->failure().empty()) e += " (TLS: " + tunnel->failure() + ")";
      return fail("{}: AUTH{} refused: {}", address, user_.empty() ? "" : " as " + user_, e);
    }
  }
  conns_[address] = ctx;
  if (tunnel) tunnels_[address] = std::move(tunnel);
  return ctx;
}

void Conn::drop(const std::string& address) {
  if (auto it = conns_.find(address); it != conns_.end()) {
    redisFree(it->second);
    conns_.erase(it);
  }
  tunnels_.erase(address);  // after hiredis closed its end
}

Status Conn::refresh_slots() {
  // Ask the nodes we know (masters first: they are the likeliest alive), then the seeds.
  std::vector<std::string> candidates;
  std::set<std::string> seen;
  auto add = [&](const std::string& a) {
    if (seen.insert(a).second) candidates.push_back(a);
  };
  for (const auto& r : ranges_) add(r.master);
  for (const auto& r : ranges_)
    for (const auto& rep : r.replicas) add(rep);
  for (const auto& s : seeds_) add(s);
  Error last{"no node to ask", kStoreUnreachable};
  for (const auto& a : candidates) {
    auto ctx = node(a);
    if (!ctx) {
      last = ctx.error();
      continue;
    }
    const SigpipeBlock no_sigpipe;
    Reply r(static_cast<redisReply*>(redisCommand(*ctx, "CLUSTER SLOTS")));
    if (!r) {
      last = Error{fmt::format("{}: {}", a, (*ctx)->errstr), kStoreUnreachable};
      drop(a);
      continue;
    }
    auto ranges = parse_cluster_slots(*r);
    if (!ranges) {
      last = Error{fmt::format("{}: {}", a, ranges.error().message), 0};
      continue;
    }
    ranges_ = std::move(*ranges);
    slot_range_.assign(kSlots, -1);
    for (size_t i = 0; i < ranges_.size(); ++i)
      for (int s = ranges_[i].first; s <= ranges_[i].last; ++s) slot_range_[s] = static_cast<int16_t>(i);
    return {};
  }
  return unexpected(Error{"cannot read CLUSTER SLOTS: " + last.message, last.code});
}

std::string Conn::route(std::string_view key) const {
  if (!cluster_) return single_;
  if (slot_range_.empty()) return {};
  int r = slot_range_[key_slot(key)];
  return r < 0 ? std::string() : ranges_[r].master;
}

int Conn::replicas_of(std::string_view key) const {
  if (!cluster_ || slot_range_.empty()) return 0;
  int r = slot_range_[key_slot(key)];
  return r < 0 ? 0 : static_cast<int>(ranges_[r].replicas.size());
}

std::vector<std::string> Conn::masters() const {
  if (!cluster_) return {single_};
  std::vector<std::string> out;
  for (const auto& r : ranges_) out.push_back(r.master);
  return out;
}

Result<redisContext*> Conn::node_for_attempt(const std::string& address, bool& retry) {
  if (address.empty()) {
    retry = true;
    return unreachable("no node serves the slot");
  }
  auto ctx = node(address);
  if (!ctx) retry = true;
  return ctx;
}

std::string Conn::tls_failure(const std::string& address) const {
  auto it = tunnels_.find(address);
  std::string why = it == tunnels_.end() ? "" : it->second->failure();
  return why.empty() ? "" : " (TLS: " + why + ")";
}

std::string Conn::drop_broken(const std::string& address, redisContext* ctx) {
  std::string e = fmt::format("{}: {}{}", address, ctx->errstr, tls_failure(address));
  drop(address);
  return e;
}

Result<Reply> Conn::run_once(const std::string& address, const Command& cmd, bool asking, bool& retry) {
  retry = false;
  auto ctx = node_for_attempt(address, retry);
  if (!ctx) return std::unexpected(ctx.error());
  // hiredis 0.14 write()s without MSG_NOSIGNAL: to a server (or TLS tunnel) that has hung up, that
  // raises SIGPIPE, which would end the controller; blocked, it is an EPIPE and a reconnect.
  const SigpipeBlock no_sigpipe;
  if (asking) redisAppendCommand(*ctx, "ASKING");
  append_argv(*ctx, cmd);
  Reply out;
  for (int i = 0; i < (asking ? 2 : 1); ++i) {
    redisReply* raw = nullptr;
    if (redisGetReply(*ctx, reinterpret_cast<void**>(&raw)) != REDIS_OK) {
      retry = true;
      return unreachable(drop_broken(address, *ctx));
    }
    out.reset(raw);
  }
  return out;
}

Result<Reply> Conn::run(std::string_view route_key, const Command& cmd) {
  auto deadline = Clock::now() + options_.retry_for;
  std::string address = route(route_key);
  bool asking = false;
  Error last;
  auto backoff = std::chrono::milliseconds(20);
  for (int attempt = 0; attempt < 100; ++attempt) {
    bool retry = false;
    auto r = run_once(address, cmd, asking, retry);
    asking = false;
    if (r && (*r)->type == REDIS_REPLY_ERROR) {
      auto e = error_text(**r);
      if (auto redirect = parse_redirect(e); redirect && cluster_) {
        if (redirect->ask) {  // this one command, on the node importing the slot
          address = redirect->node;
          asking = true;
          continue;
        }
        if (!refresh_slots())
          address = redirect->node;
        else
          address = route(route_key);
        continue;
      }
      if (transient(e)) {
        retry = true;
        last = Error{std::string(e), kStoreUnreachable};
      } else {
        return r;
      }
    } else if (r) {
      return r;
    } else {
      last = r.error();
    }
    if (!retry || (!cluster_ && attempt >= 1)) break;
    if (Clock::now() >= deadline) {
      // Giving up: the slot map is read again all the same, so that the next call (which may have
      // no time to retry) goes to the node that serves the slot by then.
      if (cluster_) (void)refresh_slots();
      break;
    }
    if (cluster_) {
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(250));
      (void)refresh_slots();  // may fail while the cluster elects; the next round asks again
      address = route(route_key);
    }
  }
  return unexpected(last);
}

Status Conn::transaction_once(const std::string& address, std::span<const Command> cmds, int wait,
                              std::string_view what, bool& retry) {
  retry = false;
  auto ctx = node_for_attempt(address, retry);
  if (!ctx) return std::unexpected(ctx.error());
  const SigpipeBlock no_sigpipe;  // as in run_once
  redisAppendCommand(*ctx, "MULTI");
  for (const auto& c : cmds) append_argv(*ctx, c);
  redisAppendCommand(*ctx, "EXEC");
  if (wait > 0)
    redisAppendCommand(*ctx, "WAIT %d %lld", wait, static_cast<long long>(options_.wait_timeout.count()));
  size_t replies = cmds.size() + 2 + (wait > 0 ? 1 : 0);
  std::string err;
  // Every reply is read, even after an error, so the connection stays in step.
  for (size_t i = 0; i < replies; ++i) {
    redisReply* raw = nullptr;
    if (redisGetReply(*ctx, reinterpret_cast<void**>(&raw)) != REDIS_OK) {
      // The EXEC may or may not have run: the caller's writes are idempotent, so it is redone.
      retry = true;
      return fail("redis {}: {}", what, drop_broken(address, *ctx));
    }
    Reply r(raw);
    bool is_exec = i == cmds.size() + 1, is_wait = i == cmds.size() + 2;
    if (r->type == REDIS_REPLY_ERROR) {
      auto e = error_text(*r);
      if (parse_redirect(e) || transient(e)) retry = true;
      if (err.empty()) err = std::string(e);
    } else if (is_exec) {
      if (r->type != REDIS_REPLY_ARRAY) {
        if (err.empty()) err = "transaction aborted";
      } else {
        for (size_t k = 0; k < r->elements && err.empty(); ++k)
          if (r->element[k]->type == REDIS_REPLY_ERROR) err = std::string(error_text(*r->element[k]));
      }
    } else if (is_wait && err.empty() && r->type == REDIS_REPLY_INTEGER && r->integer < wait) {
      // On the master but not (yet) on a replica: not acknowledged, the write is redone (and the
      // slot map re-read: the replica may have failed).
      retry = true;
      err = fmt::format("written on {} but on {} of {} replicas within {} ms", address, r->integer, wait,
                        options_.wait_timeout.count());
    }
  }
  if (!err.empty()) return fail("redis {}: {}", what, err);
  return {};
}

Status Conn::transaction(std::string_view route_key, std::span<const Command> cmds, std::string_view what) {
  auto deadline = Clock::now() + options_.retry_for;
  auto backoff = std::chrono::milliseconds(20);
  Status st;
  for (int attempt = 0; attempt < 100; ++attempt) {
    bool retry = false;
    int wait = std::min(options_.wait_replicas, replicas_of(route_key));
    st = transaction_once(route(route_key), cmds, wait, what, retry);
    if (st || !retry || (!cluster_ && attempt >= 1)) return st;
    if (Clock::now() >= deadline) {
      if (cluster_) (void)refresh_slots();  // as in run(): for the next call
      return st;
    }
    if (cluster_) {
      if (attempt > 0) {
        std::this_thread::sleep_for(backoff);
        backoff = std::min(backoff * 2, std::chrono::milliseconds(250));
      }
      (void)refresh_slots();
    }
  }
  return st;
}

}  // namespace weft::controller::redis
