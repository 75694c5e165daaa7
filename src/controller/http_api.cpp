// The controller's HTTP API (docs/api.md): named handlers on the net/http server.
// Every answer is JSON (except /metrics and the dashboard files); every error is
// {"error": "..."} with a 4xx/5xx status. Handlers never throw: JSON is dumped with invalid UTF-8
// replaced, and the server turns anything unexpected into a 500.
#include "controller/http_api.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "base/log.hpp"
#include "base/parse_integer.hpp"
#include "controller/auth.hpp"
#include "controller/blame.hpp"
#include "controller/controller.hpp"
#include "controller/gzip.hpp"
#include "controller/mesh_columns.hpp"
#include "controller/metrics_renderer.hpp"
#include "controller/metrics_text.hpp"
#include "net/address.hpp"
#include "net/http/tls.hpp"
#include "proto/pinglist.hpp"
#include "proto/register_reply.hpp"
#include "proto/registration.hpp"
#include "proto/window_counters.hpp"

// Defined by src/controller/CMakeLists.txt when web/ (the dashboard) is part of the build.
#ifdef WEFT_WEB_ASSETS
#include "controller/web_assets.hpp"
#define WEFT_HAVE_WEB_ASSETS 1
#endif

namespace weft::controller {
namespace {

using nlohmann::json;

// JSON goes uncompressed except the large columnar mesh (gzip level 1, see mesh()): at Brotli's
// maximum quality a 40 MB mesh took minutes (docs/dashboard.md).
constexpr const char* kJson = "application/json; charset=utf-8";

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string dumps(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

using net::http::Request;
using net::http::Response;

void reply(Response& res, int status, const json& j) { res.set(status, dumps(j), kJson); }
void error(Response& res, int status, std::string_view msg) { reply(res, status, json{{"error", msg}}); }

double unix_s(int64_t ns) { return static_cast<double>(ns) / 1e9; }
double us(int64_t ns) { return static_cast<double>(ns) / 1e3; }

json summary_us(const proto::LatencySummary& s) {
  if (s.count == 0)
    return json{{"count", 0}, {"p50", nullptr}, {"p90", nullptr}, {"p99", nullptr}, {"max", nullptr}};
  return json{{"count", s.count},    {"min", us(s.min_ns)},   {"mean", us(s.mean_ns)},
              {"p50", us(s.p50_ns)}, {"p90", us(s.p90_ns)},   {"p95", us(s.p95_ns)},
              {"p99", us(s.p99_ns)}, {"p999", us(s.p999_ns)}, {"max", us(s.max_ns)}};
}

json window_api_json(const proto::WindowStats& w) {
  double loss = w.sent == 0 ? 0.0 : static_cast<double>(w.lost) / static_cast<double>(w.sent);
  json j{{"window_start", unix_s(w.start_unix_ns)},
         {"window_end", unix_s(w.end_unix_ns)},
         {"target_address", w.target_address},
         {"loss_ratio", loss},
         {"network_rtt_us", summary_us(w.network_rtt)},
         {"rtt_incl_responder_delay_us", summary_us(w.rtt_incl_responder_delay)},
         {"responder_delay_us", summary_us(w.responder_delay)}};
  // The 0.1 name of rtt_incl_responder_delay_us, kept for scripts written against it (docs/api.md:
  // deprecated, to go in 0.3).
  j["rtt_us"] = j["rtt_incl_responder_delay_us"];
  proto::put_window_counters(j, w);  // sent, received, lost... as in every JSON form of a window
  return j;
}

json protocols_json(const std::vector<proto::Protocol>& ps) {
  json a = json::array();
  for (auto p : ps) a.push_back(proto::to_string(p));
  return a;
}

// Unix seconds (may be fractional) or, if larger than 1e15, Unix nanoseconds.
bool parse_time(const std::string& s, int64_t& out) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || !std::isfinite(v) || v < 0 || v > 9e18) return false;
  out = v > 1e15 ? static_cast<int64_t>(v) : static_cast<int64_t>(v * 1e9);
  return true;
}

Result<proto::Protocol> protocol_param(const Request& req) {
  if (!req.has_param("protocol")) return fail("missing query parameter 'protocol' (udp, tcp or rdma)");
  return proto::parse_protocol(req.param("protocol"));
}

constexpr std::string_view kBadToken = "missing or wrong token (Authorization: Bearer ...)";

// The agent a request speaks for: the name in its client certificate (mutual TLS, verified in the
// handshake against tls_client_ca), else its per-agent token's; "" when neither binds one.
std::string_view request_agent(const Request& req) {
  if (!req.tls_client.empty()) return req.tls_client;
  return bound_agent_name(req.header("authorization"));
}

// Agent endpoints: a client certificate (mutual TLS), an agent's token (or a shared one, when
// allowed), or none when none is configured. A certificate and a token together must agree.
bool agent_ok(const Config& cfg, const Request& req) {
  const std::string_view authorization = req.header("authorization");
  if (!req.tls_client.empty()) {
    if (authorization.empty()) return true;
    auto p = identify(cfg, authorization);
    return (p.role == Role::agent && p.agent == req.tls_client) || p.role == Role::shared_agent;
  }
  if (!agent_auth_on(cfg)) return true;
  auto p = identify(cfg, authorization);
  return p.role == Role::agent || p.role == Role::shared_agent;
}

}  // namespace

net::http::ServerOptions HttpApi::server_options(const Config& cfg) {
  net::http::ServerOptions o;
  o.limits.max_head_bytes = cfg.max_header_bytes;
  o.limits.max_body_bytes = cfg.max_body_bytes;
  o.lane_threads = {cfg.http_api_threads, cfg.http_threads};
  o.max_connections = cfg.http_max_connections;
  o.max_connections_per_address = cfg.http_max_connections_per_address;
  o.idle_timeout_ns = cfg.http_idle_timeout_ns;
  o.header_timeout_ns = cfg.http_header_timeout_ns;
  o.request_timeout_ns = cfg.http_request_timeout_ns;
  o.error_response = [](Response& res, int status, std::string_view msg) { error(res, status, msg); };
  if (request_stats_)
    o.on_request = [s = request_stats_.get()](const net::http::RequestTiming& t) { s->record(t); };
  return o;
}

net::http::Router HttpApi::routes() {
  net::http::Router router;
  std::vector<std::string> names;
  // Adds the route and names it for the request timings (RequestStats).
  struct Adder {
    net::http::Router& r;
    std::vector<std::string>& names;
    void add(std::string method, std::string pattern, net::http::Handler h, size_t lane,
             net::http::HeadCheck check = {}) {
      names.push_back(method + " " + pattern);
      r.add(std::move(method), std::move(pattern), std::move(h), lane, std::move(check));
    }
  } r{router, names};
  auto h = [this](void (HttpApi::*f)(const Req&, Res&)) {
    return [this, f](const Req& req, Res& res) { (this->*f)(req, res); };
  };
  // The read API answers from memory (the mesh, agents, suspects) whatever the store's state; while
  // the store is away every read answer says so in a header, so a client can tell a history that is
  // only the latest window from a complete one (docs/api.md "When the store is away").
  auto hr = [this](void (HttpApi::*f)(const Req&, Res&)) {
    return [this, f](const Req& req, Res& res) {
      (this->*f)(req, res);
      const bool said =
          std::ranges::any_of(res.headers, [](const auto& h) { return h.first == "X-Weft-Store"; });
      if (!said && !mesh_.store_info().healthy) res.set_header("X-Weft-Store", "unavailable");
    };
  };
  auto token = [this](const Req& req, Res& res) { return check_token(req, res); };
  auto report_token = [this](const Req& req, Res& res) { return check_report_token(req, res); };
  auto read = [this](const Req& req, Res& res) { return check_read(req, res); };
  auto admin = [this](const Req& req, Res& res) { return check_admin(req, res); };
  r.add("GET", "/healthz", h(&HttpApi::healthz), kReadLane);
  // Agent-facing (token).
  r.add("POST", "/api/v1/register", h(&HttpApi::register_agent), kAgentLane, token);
  r.add("GET", "/api/v1/pinglist", h(&HttpApi::pinglist), kAgentLane, token);
  r.add("POST", "/api/v1/report", h(&HttpApi::report), kAgentLane, report_token);
  // Admin (an admin token; agents never hold one).
  r.add("DELETE", "/api/v1/agents/*", h(&HttpApi::delete_agent), kAgentLane, admin);
  // Read API (dashboard, scripts): a read token unless read access is open (auth.hpp).
  r.add("GET", "/api/v1/mesh", hr(&HttpApi::mesh), kReadLane, read);
  r.add("GET", "/api/v1/suspects", hr(&HttpApi::suspects), kReadLane, read);
  r.add("GET", "/api/v1/topology", hr(&HttpApi::topology), kReadLane, read);
  r.add("GET", "/api/v1/pairs/*/*/history", hr(&HttpApi::pair_history), kReadLane, read);
  r.add("GET", "/api/v1/flows", hr(&HttpApi::flows), kReadLane, read);
  r.add("GET", "/api/v1/agents", hr(&HttpApi::agents), kReadLane, read);
  r.add("GET", "/api/v1/groups", hr(&HttpApi::groups), kReadLane, read);
  r.add("GET", "/api/v1/pinglists/*", hr(&HttpApi::pinglist_view), kReadLane, read);
  r.add("GET", "/metrics", h(&HttpApi::metrics), kReadLane, read);
#ifdef WEFT_HAVE_WEB_ASSETS
  r.add("GET", "/", h(&HttpApi::web_asset), kReadLane, read);
  r.add("GET", "/index.html", h(&HttpApi::web_asset), kReadLane, read);
  r.add("GET", "/assets/**", h(&HttpApi::web_asset), kReadLane, read);
#endif
  request_stats_ = std::make_unique<RequestStats>(std::move(names));
  return router;
}

bool HttpApi::check_token(const Req& req, Res& res) {
  if (agent_ok(*mesh_.config(), req)) return true;
  error(res, 401, kBadToken);
  return false;
}

bool HttpApi::check_report_token(const Req& req, Res& res) {
  auto cfg = mesh_.config();
  bool ok = check_token(req, res);
  // A report larger than any report this controller takes is refused before it is read.
  if (ok && req.content_length > cfg->max_report_bytes) {
    error(res, 413,
          fmt::format("a report of {} bytes exceeds max_report_bytes ({})", req.content_length,
                      cfg->max_report_bytes));
    ok = false;
  }
  if (ok) return true;
  mesh_.counters().requests++;
  mesh_.counters().requests_rejected++;
  return false;
}

bool HttpApi::check_read(const Req& req, Res& res) {
  auto cfg = mesh_.config();
  if (read_open(*cfg)) return true;
  auto p = identify(*cfg, req.header("authorization"));
  if (p.role == Role::reader || p.role == Role::admin) return true;
  // Browsers ask for a user name and password on this (the token is the password).
  res.set_header("WWW-Authenticate", "Basic realm=\"weft\", charset=\"UTF-8\"");
  error(res, 401,
        "a read token is needed (Authorization: Bearer TOKEN, or Basic with TOKEN as the password)");
  return false;
}

bool HttpApi::check_admin(const Req& req, Res& res) {
  auto cfg = mesh_.config();
  if (admin_open(*cfg)) return true;
  auto p = identify(*cfg, req.header("authorization"));
  if (p.role == Role::admin) return true;
  if (p.role == Role::none) {
    error(res, 401,
          cfg->admin_tokens.empty() ? "admin routes are off: no admin_tokens configured"
                                    : "an admin token is needed (Authorization: Bearer TOKEN)");
  } else {
    error(res, 403, "this route needs an admin token; agent and read tokens cannot use it");
  }
  return false;
}

bool HttpApi::agent_matches(const Req& req, Res& res, const std::string& name) {
  const std::string_view bound = request_agent(req);
  if (bound.empty() || bound == name) return true;
  error(res, 403,
        fmt::format("this {} is agent '{}''s, not '{}''s",
                    req.tls_client.empty() ? "token" : "client certificate", bound, name.substr(0, 64)));
  return false;
}

void HttpApi::healthz(const Req&, Res& res) {
  auto si = mesh_.store_info();
  reply(
      res, si.healthy ? 200 : 503,
      json{
          {"status", si.healthy ? "ok" : "degraded"},
          {"store",
           {{"kind", si.kind}, {"location", si.location}, {"healthy", si.healthy}, {"error", si.last_error}}},
          {"agents", mesh_.agent_count()},
          {"pairs", mesh_.pair_count()}});
}

void HttpApi::register_agent(const Req& req, Res& res) {
  auto cfg = mesh_.config();
  auto parsed = proto::parse_registration(req.body);
  if (!parsed) return error(res, 400, parsed.error().message);
  const proto::Registration& r = *parsed;
  if (!agent_matches(req, res, r.name)) return;
  int64_t now = now_ns();
  if (auto free = mesh_.check_name_free(r, now); !free) return error(res, 409, free.error().message);
  // Kept as received, before the agent is told it is registered: a restarted controller replays
  // it through parse_registration and still lists the agent (docs/controller.md).
  if (auto st = store_.save_registration(r.name, req.body, now); !st) {
    // An agent registering again with what this controller already holds (one failing over from
    // another replica while the store is away) has nothing new to keep: the store holds it from
    // before. Refusing it would leave the agent unable to report anywhere for the outage.
    if (!mesh_.holds_registration(r)) {
      log().error("register {}: store failed: {}", r.name, st.error().message);
      return error(res, 503, "store unavailable, retry later: " + st.error().message);
    }
    log().warn("register {}: store failed ({}); taken from memory (the registration is unchanged)", r.name,
               st.error().message);
  }
  mesh_.register_agent(r, now);
  std::string rdma;
  for (const auto& e : r.rdma) rdma += fmt::format(", rdma {} gid {} qpn {}", e.device, e.gid_text(), e.qpn);
  log().info("agent {} registered ({} {}, version {}{})", r.name, r.addresses.front(),
             protocols_json(r.protocols).dump(), r.version, rdma);
  res.set(200,
          proto::register_reply_json(
              proto::RegisterReply{mesh_.pinglist_version(r.name), Duration(cfg->report_interval_ns),
                                   Duration(cfg->pinglist_sync_ns), Duration(cfg->window_ns)}),
          kJson);
}

void HttpApi::pinglist(const Req& req, Res& res) {
  std::string name = req.param("agent");
  if (!proto::valid_host_name(name)) return error(res, 400, "agent: required, a host name");
  if (!agent_matches(req, res, name)) return;
  if (!mesh_.is_registered(name)) return error(res, 409, fmt::format("agent '{}' is not registered", name));
  // The version the agent holds (0 or absent: none); text that is not exactly a number is refused,
  // not read as its leading digits.
  std::optional<uint64_t> have = req.has_param("version") ? parse_integer<uint64_t>(req.param("version")) : 0;
  if (!have) return error(res, 400, "version: a pinglist version, an unsigned integer");
  auto pl = mesh_.pinglist_for(name);
  // What the agent was handed, told to the other replicas when it changed (their agent lists agree).
  // One not passed on (the store away) is published again by the controller's chores.
  if (mesh_.record_pinglist_sent(name, pl) && store_.shared() && store_.info().healthy &&
      store_.publish_pinglist(name, pl.version, pl.target_count()))
    mesh_.pinglist_published(name, pl.version);
  if (*have == pl.version) return res.set(200, proto::pinglist_unchanged_json(pl.version), kJson);
  res.set(200, proto::pinglist_json(pl), kJson);
}

void HttpApi::report(const Req& req, Res& res) {
  // A per-agent token (checked before the body was read) binds the report to its agent.
  auto r = ingest_.handle(req.header("content-type"), req.body, now_ns(), request_agent(req));
  res.set(r.status, std::move(r.body), kJson);
}

namespace {
// gzip's magic bytes; a JSON body never starts with them.
bool is_gzip(std::string_view body) {
  return body.size() >= 2 && static_cast<uint8_t>(body[0]) == 0x1f && static_cast<uint8_t>(body[1]) == 0x8b;
}
}  // namespace

// Which hosts a mesh answer lists and which pairs it holds: a group's (or arrow's) ends, or every
// agent that runs the protocol. Empty for a group not (or no longer) configured.
std::optional<HttpApi::MeshPick> HttpApi::mesh_pick(proto::Protocol protocol,
                                                    const std::string& group) const {
  MeshPick pick;
  if (group.empty()) {
    for (const auto& ag : mesh_.agents())
      if (std::find(ag.protocols.begin(), ag.protocols.end(), protocol) != ag.protocols.end())
        pick.hosts.push_back(ag.name);
    return pick;
  }
  auto ends = mesh_.group_ends(group);
  if (!ends) return std::nullopt;
  pick.srcs = std::move(ends->from);
  pick.dsts = std::move(ends->to);
  std::set<std::string> both(pick.srcs.begin(), pick.srcs.end());
  both.insert(pick.dsts.begin(), pick.dsts.end());
  pick.hosts.assign(both.begin(), both.end());
  pick.whole = false;
  return pick;
}

// The columnar mesh of one protocol (and group, "" for all hosts), gzipped at a fast level when
// `gzip` and it is large. Reads the mesh as it is now: it may run on the render cache's thread
// (a group gone since the request: an empty mesh).
std::string HttpApi::mesh_columns_body(proto::Protocol protocol, const std::string& group, bool gzip) const {
  auto pick = mesh_pick(protocol, group);
  MeshCells kept;
  if (pick)
    kept =
        pick->whole ? mesh_.latest_cells(protocol) : mesh_.latest_cells(protocol, &pick->srcs, &pick->dsts);
  std::string body = mesh_columns_json({proto::to_string(protocol), group, mesh_.window_ns(), now_ns(),
                                        pick ? std::move(pick->hosts) : std::vector<std::string>{}},
                                       kept);
  if (gzip && body.size() > 64 * 1024)
    if (auto z = gzip_compress(body); z) return std::move(*z);
  return body;
}

void HttpApi::mesh(const Req& req, Res& res) {
  auto proto = protocol_param(req);
  if (!proto) return error(res, 400, proto.error().message);
  const std::string group = req.param("group");
  const std::string format = req.param("format");
  if (!format.empty() && format != "rows" && format != "columns")
    return error(res, 400,
                 fmt::format("format: 'rows' (the default) or 'columns', not '{}'", format.substr(0, 32)));
  if (!group.empty() && !mesh_.group_ends(group))
    return error(res, 404, fmt::format("no group named '{}'", group));
  if (format == "columns") {
    // The dashboard's form. At 1,000 hosts it copies, writes and compresses a million pairs (~5 s on
    // a loaded 2-core machine): like the suspects, it is computed at most once per
    // kMeshAnswerMaxAgeNs when expensive, gzipped once, and every tab shares it.
    const bool gzip = accepts_gzip(req.header("accept-encoding"));
    const std::string key =
        fmt::format("mesh columns {} {} {}", proto::to_string(*proto), group, gzip ? "gz" : "");
    std::string body = whole_mesh_answers_.get(
        key, [this, p = *proto, group, gzip] { return mesh_columns_body(p, group, gzip); });
    if (is_gzip(body)) {
      res.set_header("Content-Encoding", "gzip");
      res.set_header("Vary", "Accept-Encoding");
    }
    res.set(200, std::move(body), kJson);
    return;
  }
  // The pairs wanted are picked by source and destination inside the mesh (Mesh::latest_between):
  // one group's mesh never copies the whole fleet's pairs.
  auto pick = mesh_pick(*proto, group);
  if (!pick) return error(res, 404, fmt::format("no group named '{}'", group));  // removed meanwhile
  const int64_t now = now_ns();
  json pairs = json::array();
  for (const auto& pw :
       pick->whole ? mesh_.latest(*proto) : mesh_.latest_between(*proto, pick->srcs, pick->dsts)) {
    json p = window_api_json(pw.window);
    p["src"] = pw.src;
    p["dst"] = pw.dst;
    p["age_s"] = unix_s(now - pw.window.end_unix_ns);
    pairs.push_back(std::move(p));
  }
  reply(res, 200,
        json{{"protocol", proto::to_string(*proto)},
             {"group", group.empty() ? json(nullptr) : json(group)},
             {"window_s", unix_s(mesh_.window_ns())},
             {"hosts", pick->hosts},
             {"pairs", std::move(pairs)}});
}

// Which hosts and links the latest mesh blames (controller/blame.hpp, docs/api.md).
void HttpApi::suspects(const Req& req, Res& res) {
  auto proto = protocol_param(req);
  if (!proto) return error(res, 400, proto.error().message);
  BlameOptions opt;
  if (req.has_param("loss")) {
    const std::string v = req.param("loss");
    double x = -1;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc{} || end != v.data() + v.size() || !(x > 0 && x <= 1))
      return error(res, 400, fmt::format("loss must be a number in (0, 1], not '{}'", v));
    opt.loss_threshold = x;
  }
  // Blame ranks every pair of the protocol: at most once per kMeshAnswerMaxAgeNs in a large mesh.
  const std::string key = fmt::format("suspects {} {}", proto::to_string(*proto), opt.loss_threshold);
  res.set(200, whole_mesh_answers_.get(key, [this, p = *proto, opt] { return suspects_json(p, opt); }),
          kJson);
}

std::string HttpApi::suspects_json(proto::Protocol protocol, const BlameOptions& opt) const {
  std::vector<std::string> down;
  const auto agents = mesh_.agents();
  for (const auto& ag : agents)
    if (ag.state == AgentState::down) down.push_back(ag.name);
  const Blame b = find_blame(mesh_.latest(protocol), down, now_ns(), mesh_.window_ns(), opt,
                             blame_context(protocol, agents, mesh_.groups()));
  json hosts = json::array(), links = json::array();
  for (const auto& h : b.hosts)
    hosts.push_back({{"host", h.host},
                     {"direction", h.direction},
                     {"reason", h.reason},
                     {"bad_pairs", h.bad_pairs},
                     {"pairs", h.pairs},
                     {"loss_ratio", h.loss_ratio}});
  for (const auto& l : b.links) {
    json lj{{"src", l.src}, {"dst", l.dst}, {"reason", l.reason}, {"loss_ratio", l.loss_ratio}};
    if (l.rtt_ns) lj["rtt_us"] = static_cast<double>(l.rtt_ns) / 1e3;
    if (l.expected_ns) lj["expected_rtt_us"] = static_cast<double>(l.expected_ns) / 1e3;
    links.push_back(std::move(lj));
  }
  // Network elements by fault localisation ([] without a topology).
  const ElementWatch::Answer located =
      elements_.update(mesh_.config()->topology, protocol, mesh_, ingest_.flows(), now_ns());
  json out{{"protocol", proto::to_string(protocol)},
           {"loss_threshold", opt.loss_threshold},
           {"latency_factor", opt.latency_factor},
           {"latency_margin_us", static_cast<double>(opt.latency_margin_ns) / 1e3},
           {"measured_pairs", b.measured_pairs},
           {"bad_pairs", b.bad_pairs},
           {"slow_pairs", b.slow_pairs},
           {"hosts", std::move(hosts)},
           {"links", std::move(links)},
           {"down", down},
           {"elements", elements_json(located.result)}};
  if (located.topology) out["localisation"] = coverage_json(located.result);
  return dumps(out);
}

// The configured topology and which of its elements the latest localisation names (docs/api.md).
void HttpApi::topology(const Req&, Res& res) {
  const auto cfg = mesh_.config();
  reply(res, 200, topology_json(cfg->topology.get(), elements_.latest()));
}

// weft_element_* for /metrics when a topology is configured (each protocol localised first).
std::string HttpApi::element_metrics() const {
  const auto cfg = mesh_.config();
  if (!cfg->topology) return {};
  for (const auto& pp : cfg->protocols)
    elements_.update(cfg->topology, pp.protocol, mesh_, ingest_.flows(), now_ns());
  PromText t;
  render_element_metrics(t, elements_.latest());
  return t.take();
}

// One pair's flows: per-flow counters, traced paths and path changes (docs/api.md).
void HttpApi::flows(const Req& req, Res& res) {
  auto proto = protocol_param(req);
  if (!proto) return error(res, 400, proto.error().message);
  const std::string src = req.param("src"), dst = req.param("dst");
  if (!proto::valid_host_name(src) || !proto::valid_host_name(dst))
    return error(res, 400, "src and dst: host names of the pair (?protocol=udp&src=A&dst=B)");
  res.set(200, pair_flows_json(ingest_.flows().pair(*proto, src, dst, now_ns())), kJson);
}

void HttpApi::pair_history(const Req& req, Res& res) {
  const std::string& src = req.matches.at(0);
  const std::string& dst = req.matches.at(1);
  if (!proto::valid_host_name(src) || !proto::valid_host_name(dst))
    return error(res, 400, "src and dst must be host names");
  auto proto = protocol_param(req);
  if (!proto) return error(res, 400, proto.error().message);
  int64_t now = now_ns();
  int64_t since = now - 3600LL * 1'000'000'000, until = now + 3600LL * 1'000'000'000;
  if (req.has_param("since") && !parse_time(req.param("since"), since))
    return error(res, 400, "since: Unix seconds (e.g. 1763700000.5) or Unix nanoseconds");
  if (req.has_param("until") && !parse_time(req.param("until"), until))
    return error(res, 400, "until: Unix seconds or Unix nanoseconds");
  size_t limit = 10000;
  if (req.has_param("limit")) {
    auto l = parse_integer<size_t>(req.param("limit"));
    if (!l || *l == 0 || *l > 100000) return error(res, 400, "limit: 1..100000");
    limit = *l;
  }
  auto h = store_.history(*proto, src, dst, since, until, limit);
  json windows = json::array();
  if (h) {
    for (const auto& w : *h) windows.push_back(window_api_json(w));
  } else if (auto latest = mesh_.latest_pair(*proto, src, dst);
             latest && latest->window.start_unix_ns >= since && latest->window.start_unix_ns < until) {
    // The store is away: what memory holds of the pair (its latest window), marked as such, rather
    // than no answer (a Redis outage must not blind the dashboard's drill-down).
    windows.push_back(window_api_json(latest->window));
  }
  json body{{"protocol", proto::to_string(*proto)},
            {"src", src},
            {"dst", dst},
            {"since", unix_s(since)},
            {"windows", std::move(windows)}};
  if (!h) {
    body["store_unavailable"] = true;
    body["store_error"] = h.error().message;
    res.set_header("X-Weft-Store", "unavailable");
  }
  reply(res, 200, body);
}

namespace {

json agent_json(const AgentInfo& a, int64_t now) {
  json alarms = json::array();
  for (const auto& al : a.alarms)
    alarms.push_back({{"kind", al.kind}, {"message", al.message}, {"since", unix_s(al.since_unix_ns)}});
  json rdma = json::array();
  for (const auto& e : a.rdma) rdma.push_back(proto::rdma_endpoint_json(e));
  return json{{"name", a.name},
              {"state", to_string(a.state)},
              {"addresses", a.addresses},
              {"protocols", protocols_json(a.protocols)},
              {"rdma", std::move(rdma)},
              {"version", a.version},
              {"registered", unix_s(a.registered_unix_ns)},
              {"last_seen", unix_s(a.last_seen_unix_ns)},
              {"last_seen_age_s", unix_s(now - a.last_seen_unix_ns)},
              {"pinglist_version", a.pinglist_version},
              {"pinglist_targets", a.pinglist_targets},
              {"health",
               {{"cpu_percent", a.health.cpu_percent},
                {"rss_kb", a.health.rss_kb},
                {"probes_per_s", a.health.probes_per_s},
                {"dropped_windows", a.health.dropped_windows},
                {"spooled_windows", a.health.spooled_windows},
                {"prober_restarts", a.health.prober_restarts}}},
              {"alarms", std::move(alarms)}};
}

}  // namespace

// The whole list (at 10,000 agents a 250-500 ms render) is a whole-mesh answer: computed at most
// once per kMeshAnswerMaxAgeNs (or 10x its cost) when expensive. ?limit=N[&after=NAME] gives one
// page, in name order, computed for the request: {"agents":[...],"next":"NAME"|null}.
void HttpApi::agents(const Req& req, Res& res) {
  if (!req.has_param("limit") && !req.has_param("after")) {
    res.set(200, whole_mesh_answers_.get("agents", [this] { return agents_json(); }), kJson);
    return;
  }
  uint64_t limit = kAgentsPageDefault;
  if (req.has_param("limit")) {
    auto l = parse_integer<uint64_t>(req.param("limit"));
    if (!l || *l < 1 || *l > kAgentsPageMax)
      return error(res, 400, fmt::format("limit must be an integer from 1 to {}", kAgentsPageMax));
    limit = *l;
  }
  const int64_t now = now_ns();
  auto page = mesh_.agents_page(req.param("after"), static_cast<size_t>(limit) + 1);
  const bool more = page.size() > limit;
  if (more) page.pop_back();
  json agents = json::array();
  for (const auto& a : page) agents.push_back(agent_json(a, now));
  json next = more ? json(page.back().name) : json(nullptr);
  reply(res, 200, json{{"agents", std::move(agents)}, {"next", std::move(next)}});
}

std::string HttpApi::agents_json() const {
  json agents = json::array();
  const int64_t now = now_ns();
  for (const auto& a : mesh_.agents()) agents.push_back(agent_json(a, now));
  return dumps(json{{"agents", std::move(agents)}});
}

void HttpApi::groups(const Req&, Res& res) {
  auto cfg = mesh_.config();
  json protos = json::array();
  for (const auto& p : cfg->protocols) protos.push_back(proto::to_string(p.protocol));
  json groups = json::array();
  for (const auto& g : mesh_.groups())
    groups.push_back({{"name", g.name}, {"protocols", protocols_json(g.protocols)}, {"members", g.members}});
  reply(res, 200, json{{"protocols", std::move(protos)}, {"groups", std::move(groups)}});
}

// Forgets an agent (a mistyped name, a decommissioned host). A live agent would register again
// with its next report, so one still reporting needs ?force=1 (stop it first).
void HttpApi::delete_agent(const Req& req, Res& res) {
  const std::string& name = req.matches.at(0);
  if (!proto::valid_host_name(name)) return error(res, 400, "not a host name");
  if (!mesh_.is_registered(name)) return error(res, 404, fmt::format("agent '{}' is not registered", name));
  if (auto age = mesh_.up_for(name, now_ns()); age && req.param("force") != "1")
    return error(res, 409,
                 fmt::format("agent '{}' is up (last report {:.1f} s ago) and would register again: stop "
                             "it first, or add ?force=1",
                             name, *age));
  if (auto st = store_.remove_registration(name); !st)
    return error(res, 503, "store unavailable, retry later: " + st.error().message);
  mesh_.remove_agent(name);
  ingest_.policy().forget(name);
  log().info("agent {} removed", name);
  reply(res, 200, json{{"removed", name}});
}

// Read-only view of what an agent is told to probe (for operators and tests).
void HttpApi::pinglist_view(const Req& req, Res& res) {
  const std::string& name = req.matches.at(0);
  if (!proto::valid_host_name(name)) return error(res, 400, "not a host name");
  if (!mesh_.is_registered(name)) return error(res, 404, fmt::format("agent '{}' is not registered", name));
  res.set(200, proto::pinglist_json(*mesh_.pinglist_shared(name)), kJson);
}

void HttpApi::metrics(const Req& req, Res& res) {
  MetricsOptions opt;
  opt.per_pair = req.param("pairs") == "1";  // per-pair series are opt-in (docs/metrics.md)
  // The mesh's series walk every pair: at most once per kMeshAnswerMaxAgeNs in a large mesh. The
  // request timings are counters, always current.
  std::string body = whole_mesh_answers_.get(opt.per_pair ? "metrics pairs" : "metrics", [this, opt] {
    return render_metrics(mesh_, opt, now_ns()) + element_metrics();
  });
  PromText t;
  if (request_stats_) request_stats_->render(t);
  if (remote_write_) remote_write_->render(t);
  if (server_) {
    const auto st = server_->stats();
    t.family("weft_controller_http_connections", PromType::gauge, "HTTP connections open now");
    t.sample(static_cast<double>(st.open));
    if (tls_) {
      // Handshake failures are not logged one by one (anyone could fill the log): counted here.
      t.family("weft_controller_tls_handshakes_total", PromType::counter,
               "TLS handshakes: ok, failed (no common version or cipher, not TLS, a client certificate "
               "that does not verify), timed_out (not finished within http_header_timeout)");
      t.sample({{"result", "ok"}}, static_cast<double>(st.tls_handshakes));
      t.sample({{"result", "failed"}}, static_cast<double>(st.tls_handshake_failures));
      t.sample({{"result", "timed_out"}}, static_cast<double>(st.tls_handshake_timeouts));
    }
  }
  body += t.text();
  res.set(200, std::move(body), std::string(kPromContentType));
}

void HttpApi::web_asset([[maybe_unused]] const Req& req, Res& res) {
#ifdef WEFT_HAVE_WEB_ASSETS
  auto a = find_web_asset(req.path);
  if (!a) return error(res, 404, "no such file");
  res.set_header("ETag", std::string(a->etag));
  if (req.header("if-none-match") == a->etag) {
    res.status = 304;
    return;
  }
  res.set(200, std::string(a->body), std::string(a->content_type));
#else
  error(res, 404, "no such file");
#endif
}

}  // namespace weft::controller
