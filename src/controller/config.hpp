#pragma once
// The controller's YAML config (deploy/weft.yaml is a commented example; docs/controller.md).
// Errors name the file, line, column and field path, e.g.
//   "weft.yaml:14:17: groups[0].protocols[1]: unknown protocol 'udpp' (expected udp, tcp or rdma)".
// Unknown keys are errors too: a typo must not silently fall back to a default.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "controller/glob.hpp"  // glob_match, for the group patterns
#include "controller/topology.hpp"
#include "proto/defaults.hpp"
#include "proto/window_stats.hpp"

namespace weft::controller {

struct ProtocolPlan {
  proto::Protocol protocol = proto::Protocol::udp;
  int64_t interval_ns = proto::defaults::kProbeInterval.count();  // between probes to one target
  int64_t timeout_ns = proto::defaults::kProbeTimeout.count();    // a probe unanswered this long is lost
  // Flows (source ports) per target; 0 = the protocol's default (default_flows). Only UDP splits a
  // pair into flows (docs/probe.md "Flows").
  uint32_t flows = 0;
  uint32_t flows_or_default() const { return flows ? flows : default_flows(protocol); }
  // UDP: 8. With uniform hashing one pair's 8 flows cross a given path of a 4-way ECMP with
  // probability 0.90 (8-way: 0.66) and every path of a 4-way one with 0.62; a fabric element is
  // crossed by many pairs, so some of their flows cross it almost surely. TCP and RDMA: 1.
  // (docs/probe.md "Flows" has the table.)
  static uint32_t default_flows(proto::Protocol p) { return p == proto::Protocol::udp ? 8 : 1; }
};

// A named group of hosts probed as a full mesh. Members are host names or shell globs ("rack1-*",
// "*" for every agent).
struct GroupRule {
  std::string name;
  std::vector<proto::Protocol> protocols;
  std::vector<std::string> members;
};

// Every host matching `from` probes every host matching `to`.
struct ArrowRule {
  std::string name;
  std::vector<proto::Protocol> protocols;
  std::vector<std::string> from;
  std::vector<std::string> to;
};

struct Config {
  std::string path;                 // where it was read from ("" when parsed from a string)
  std::vector<std::string> listen;  // "HOST:PORT", at least one
  std::vector<std::string> tokens;  // shared agent tokens (legacy: needs shared_tokens)
  // Credentials (controller/auth.hpp, docs/controller.md "Credentials").
  std::vector<std::string> agent_secrets;  // per-agent tokens: HMAC(secret, name); the first issues them
  bool shared_tokens = false;              // accept `tokens` (one token for all agents): migration only
  bool open_agents = false;                // no agent credential although listening beyond loopback
  std::vector<std::string> admin_tokens;   // forced agent removal
  std::vector<std::string> read_tokens;    // read API, dashboard, /metrics
  bool open_read = false;                  // read API open although listening beyond loopback (a proxy)
  std::string store = "sqlite:weft-history.db";  // sqlite:PATH | redis://HOST:PORT | redis+unix:///PATH
  // How long start-up waits for a store it cannot reach (retrying with back-off); 0: until it can,
  // or until SIGTERM/SIGINT.
  int64_t store_startup_timeout_ns = 0;
  // rediss:// / rediss-cluster://: the CA the Redis nodes' certificates must chain to ("" = the
  // system's), and a client certificate and key for Redis's tls-auth-clients (PEM, relative to the
  // config's folder).
  std::string store_ca, store_cert, store_key;
  int64_t retention_ns = 7LL * 24 * 3600 * 1'000'000'000;
  // TLS (docs/controller.md "TLS"): HTTPS on every listen address when tls_cert and tls_key are
  // set (PEM files, relative to the config's folder; SIGHUP reads them again); tls_client_ca asks
  // every client for a certificate that CA signed (mutual TLS: an agent's certificate must name it).
  // Without TLS a non-loopback listen address needs plain_http: true, and the controller warns.
  std::string tls_cert, tls_key, tls_client_ca;
  bool plain_http = false;
  // Prometheus remote write of the pairs' windows (controller/remote_write.hpp): http(s)://HOST:PORT/PATH
  // or "" (off), and how often; over https the receiver is verified against remote_write_ca (else
  // the system's CAs). Credentials: a bearer token, or basic auth (user name and password), read
  // from files named in the config.
  std::string remote_write;
  int64_t remote_write_interval_ns = 10'000'000'000;
  // Windows waiting for the receiver at most (controller/remote_write_queue.hpp): past it the
  // oldest are dropped and counted.
  size_t remote_write_queue_windows = 1'000'000;
  // The queue's file (controller/remote_write_spool.hpp), so a crash loses nothing the receiver
  // had not acknowledged: "" (default: beside the SQLite database, PATH.remote-write-spool, or
  // weft-remote-write.spool in the working directory with a Redis store), a path (relative to the
  // config's folder), or "off" (memory only). Taken at start (a reload does not move it).
  std::string remote_write_spool;
  std::string remote_write_ca;
  std::string remote_write_bearer_token;
  std::string remote_write_username, remote_write_password;
  int64_t window_ns = proto::defaults::kWindow.count();  // the agents' window length
  int64_t agent_down_after_ns = 30'000'000'000;          // no report this long -> down
  int64_t report_interval_ns =
      proto::defaults::kReportInterval.count();  // how often agents send what they have
  int64_t pinglist_sync_ns =
      proto::defaults::kPinglistSync.count();  // how often agents re-check their pinglist
  // HTTP server (net/http/server.hpp, docs/controller.md "HTTP limits").
  size_t http_threads = 8;      // workers for the agent-facing routes (register, report, pinglist)
  size_t http_api_threads = 4;  // workers for the read API, /metrics and the dashboard
  size_t http_max_connections = 20000;
  size_t http_max_connections_per_address = 1024;
  int64_t http_idle_timeout_ns = 60'000'000'000;
  int64_t http_header_timeout_ns = 10'000'000'000;
  int64_t http_request_timeout_ns = 60'000'000'000;
  size_t max_header_bytes = 16 * 1024;
  size_t max_body_bytes = 64u << 20;
  size_t max_report_bytes = 16u << 20;  // POST /api/v1/report bodies (413 from the headers)
  std::vector<ProtocolPlan> protocols;
  std::vector<GroupRule> groups;
  std::vector<ArrowRule> arrows;
  // The network's racks, ToRs, spines and links for fault localisation (topology.hpp): from the
  // `topology:` section or the file `topology_file:` names (reloaded when it changes); null: none.
  std::shared_ptr<const Topology> topology;
  std::string topology_file;  // as resolved (relative to the config file's folder)

  const ProtocolPlan* plan(proto::Protocol p) const {
    for (const auto& pp : protocols)
      if (pp.protocol == p) return &pp;
    return nullptr;
  }
};

// `source_name` is used in error messages (the file path, or e.g. "<test>").
Result<Config> parse_config(std::string_view yaml_text, const std::string& source_name);
Result<Config> load_config(const std::string& path);

}  // namespace weft::controller
