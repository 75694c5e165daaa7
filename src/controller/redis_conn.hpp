#pragma once
// The Redis store's connection: one server (redis://, redis+unix://) or a Redis Cluster
// (redis-cluster://HOST:PORT[,HOST:PORT...], any of its nodes as seeds). In a cluster every
// command goes to the master serving its key's slot (redis_slots.hpp); a MOVED reply, a refused
// or lost connection, CLUSTERDOWN or TRYAGAIN makes it re-read CLUSTER SLOTS and try again, for a
// bounded time, so a master's failover costs a pause, not an error. Writes that are retried must
// be idempotent (the store's are: see store_redis.cpp). Not thread-safe: the store locks.
//
// Credentials: redis://USER:PASSWORD@HOST:PORT (an ACL user), redis://:PASSWORD@HOST:PORT
// (requirepass, the default user), the same after redis-cluster:// for every node of a cluster;
// percent-escapes are decoded (a password with '@' or ':' in it). Every new connection sends AUTH
// first. spec() and every error name the store with the password replaced by "***".
//
// TLS: rediss://HOST:PORT and rediss-cluster://HOST:PORT[,...] reach every node over TLS
// (redis_tls.hpp), verified against ConnOptions::tls.
#include <hiredis/hiredis.h>

#include <chrono>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "controller/redis_slots.hpp"
#include "controller/redis_tls.hpp"

namespace weft::controller::redis {

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;
using Command = std::vector<std::string>;

struct ConnOptions {
  // How long one call keeps retrying through redirects and failovers before it reports an error
  // (a cluster's failover takes about cluster-node-timeout plus a second).
  std::chrono::milliseconds retry_for{3000};
  // In a cluster, a write is acknowledged only once WAIT saw it on this many replicas of its
  // shard (capped by the replicas CLUSTER SLOTS lists, so a shard that lost its replica keeps
  // taking writes); 0 turns it off. Without it a master that dies right after EXEC can take an
  // acknowledged write with it (Redis replicates asynchronously).
  int wait_replicas = 1;
  std::chrono::milliseconds wait_timeout{500};
  // rediss:// and rediss-cluster://: the CA the nodes' certificates must chain to (else the
  // system's), and a client certificate for servers with tls-auth-clients (redis_tls.hpp).
  TlsFiles tls;
};

class Conn {
 public:
  static Result<std::unique_ptr<Conn>> open(const std::string& spec, ConnOptions options = {});
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  bool cluster() const { return cluster_; }
  // How long each call from now on keeps retrying (ConnOptions::retry_for at first). The store
  // shortens it to nothing while the store is known to be away, so that no caller waits out the
  // retries of every call of an outage (docs/store-redis.md "When a shard is away").
  void set_retry_for(std::chrono::milliseconds d) { options_.retry_for = d; }
  std::chrono::milliseconds retry_for() const { return options_.retry_for; }
  const std::string& spec() const { return spec_; }

  // One command on the node serving `route_key` (ignored for one server). Error replies other
  // than redirects and cluster-down are returned as replies, for the caller to judge.
  Result<Reply> run(std::string_view route_key, const Command& cmd);

  // MULTI, `cmds`, EXEC on the node serving `route_key` (every key of `cmds` must hash to its slot),
  // then WAIT as ConnOptions says. Fails on any error reply, an aborted EXEC or an error inside
  // EXEC's results (a command that failed when it ran, e.g. WRONGTYPE); retried like run().
  Status transaction(std::string_view route_key, std::span<const Command> cmds, std::string_view what);

  // The masters of a cluster (HOST:PORT) as last read, or the one server.
  std::vector<std::string> masters() const;

  // "redis://user:pass@host:port" -> user "user", password "pass", and the spec with the userinfo
  // taken out (`bare`) and with the password shown as "***" (`shown`). No '@': no credentials.
  struct Credentials {
    std::string user, password, bare, shown;
  };
  static Result<Credentials> split_credentials(const std::string& spec);

 private:
  Conn(std::string spec, ConnOptions options) : spec_(std::move(spec)), options_(options) {}
  Status refresh_slots();
  Result<redisContext*> node(const std::string& address);
  void drop(const std::string& address);
  std::string route(std::string_view key) const;
  int replicas_of(std::string_view key) const;

  // The open connection to the node an attempt goes to; when there is none (no node serves the
  // slot, or it cannot be reached) sets `retry`: a refresh of the slot map may find another.
  Result<redisContext*> node_for_attempt(const std::string& address, bool& retry);
  // A connection whose reply could not be read is out of step: closes it (the next use reopens it)
  // and returns why, naming the node.
  std::string drop_broken(const std::string& address, redisContext* ctx);
  // " (TLS: why)" when the node's TLS connection ended with a reason, else "".
  std::string tls_failure(const std::string& address) const;
  // One attempt; `retry` is set when the failure is one worth another try after a refresh.
  Result<Reply> run_once(const std::string& address, const Command& cmd, bool asking, bool& retry);
  Status transaction_once(const std::string& address, std::span<const Command> cmds, int wait,
                          std::string_view what, bool& retry);

  std::string spec_;
  ConnOptions options_;
  bool cluster_ = false;
  std::vector<std::string> seeds_;              // cluster: the addresses we were given
  std::string single_;                          // one server: "HOST:PORT" or "unix:PATH"
  std::vector<SlotRange> ranges_;               // cluster: as CLUSTER SLOTS said
  std::vector<int16_t> slot_range_;             // slot -> index in ranges_, -1 if unserved
  std::map<std::string, redisContext*> conns_;  // address -> open connection
  std::string user_, password_;                 // AUTH on every new connection when password_ is set
  std::shared_ptr<TlsClientContext> tls_;       // rediss: every node over TLS
  std::map<std::string, std::unique_ptr<TlsTunnel>> tunnels_;  // address -> its TLS pump
};

}  // namespace weft::controller::redis
