#pragma once
// The controller's HTTP API (docs/api.md): one named handler per route, served by the
// event-driven server in net/http. Routes run on two worker lanes so that a flood of agent
// reports never queues ahead of the read API, the dashboard or /metrics, and the reverse.
#include <memory>
#include <optional>

#include "controller/blame.hpp"
#include "controller/config.hpp"
#include "controller/element_watch.hpp"
#include "controller/ingest.hpp"
#include "controller/mesh.hpp"
#include "controller/render_cache.hpp"
#include "controller/request_stats.hpp"
#include "controller/store.hpp"
#include "net/http/router.hpp"
#include "net/http/server.hpp"

namespace weft::controller {

class HttpApi {
 public:
  enum Lane : size_t { kReadLane = 0, kAgentLane = 1 };

  HttpApi(Mesh& mesh, Store& store, Ingest& ingest) : mesh_(mesh), store_(store), ingest_(ingest) {}

  // The routes (call once, before server_options()).
  net::http::Router routes();
  // The server's limits and worker counts from the config (docs/controller.md), and the hook that
  // times every request into /metrics (request_stats.hpp).
  net::http::ServerOptions server_options(const Config& cfg);
  // The server whose connection and TLS handshake counters /metrics shows (it outlives the routes'
  // last request: the controller stops it before it drops this API).
  void set_server(const net::http::Server* server, bool tls) {
    server_ = server;
    tls_ = tls;
  }
  // The remote-write queue whose counters /metrics shows (null: none).
  void set_remote_write_queue(const RemoteWriteQueue* q) { remote_write_ = q; }

  // Answers that walk the whole mesh are computed at most once per this interval when they are
  // expensive (render_cache.hpp): the report interval, so they lag the mesh by one report at most.
  static constexpr int64_t kMeshAnswerMaxAgeNs = 1'000'000'000;
  static constexpr int64_t kCheapAnswerNs = 20'000'000;
  // Never serve such an answer older than this (three default windows): recompute and wait.
  static constexpr int64_t kMeshAnswerMaxStaleNs = 30'000'000'000;
  // GET /api/v1/agents?limit=N: the page size when only `after` is given, and the largest.
  static constexpr uint64_t kAgentsPageDefault = 1000, kAgentsPageMax = 10000;

 private:
  using Req = net::http::Request;
  using Res = net::http::Response;

  // Before the body is read (controller/auth.hpp): agent-facing routes need an agent's token, the
  // read API a read token (unless it is open), admin routes an admin token; a wrong or missing one
  // gets 401 at once, a credential of the wrong kind 403.
  bool check_token(const Req& req, Res& res);
  bool check_report_token(const Req& req, Res& res);
  bool check_read(const Req& req, Res& res);
  bool check_admin(const Req& req, Res& res);
  // A per-agent token's name must be the agent the request is about (403 otherwise).
  bool agent_matches(const Req& req, Res& res, const std::string& name);

  void healthz(const Req& req, Res& res);
  void register_agent(const Req& req, Res& res);
  void pinglist(const Req& req, Res& res);
  void report(const Req& req, Res& res);
  void mesh(const Req& req, Res& res);
  void suspects(const Req& req, Res& res);
  std::string suspects_json(proto::Protocol protocol, const BlameOptions& opt) const;
  void topology(const Req& req, Res& res);
  std::string element_metrics() const;
  struct MeshPick {
    std::vector<std::string> hosts, srcs, dsts;
    bool whole = true;  // every pair of the protocol (no group): srcs and dsts unused
  };
  std::optional<MeshPick> mesh_pick(proto::Protocol protocol, const std::string& group) const;
  std::string mesh_columns_body(proto::Protocol protocol, const std::string& group, bool gzip) const;
  void pair_history(const Req& req, Res& res);
  void flows(const Req& req, Res& res);
  void agents(const Req& req, Res& res);
  std::string agents_json() const;
  void groups(const Req& req, Res& res);
  void delete_agent(const Req& req, Res& res);
  void pinglist_view(const Req& req, Res& res);
  void metrics(const Req& req, Res& res);
  void web_asset(const Req& req, Res& res);

  Mesh& mesh_;
  Store& store_;
  Ingest& ingest_;
  std::unique_ptr<RequestStats> request_stats_;
  const net::http::Server* server_ = nullptr;  // its connection and TLS counters go to /metrics
  bool tls_ = false;
  const RemoteWriteQueue* remote_write_ = nullptr;
  mutable ElementWatch elements_;  // fault localisation's state per protocol (element_watch.hpp)
  RenderCache whole_mesh_answers_{kMeshAnswerMaxAgeNs, kCheapAnswerNs, kMeshAnswerMaxStaleNs};
};

}  // namespace weft::controller
