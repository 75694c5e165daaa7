#include "controller/controller.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "base/log.hpp"
#include "controller/auth.hpp"
#include "controller/http_api.hpp"
#include "controller/remote_write.hpp"
#include "controller/replica_sync.hpp"
#include "net/address.hpp"
#include "net/http/server.hpp"
#include "net/http/tls.hpp"
#include "proto/registration.hpp"

namespace weft::controller {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t file_mtime_ns(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec + st.st_size;
}

// How far back a restart reloads windows: enough to rebuild the latest mesh and the dedup rings.
constexpr int64_t kRestoreWindowNs = 30LL * 60 * 1'000'000'000;

// While the store is away, a replica tries to pass on the pinglists it handed out at most this often
// (a try may wait out the store's connection timeout; the sweep must not).
constexpr int64_t kPinglistRetryNs = 10'000'000'000;

// Pinglists this replica handed agents that the other replicas were not told of (the store was
// away when they were handed, http_api.cpp): published now, in order, until one fails.
void publish_handed_pinglists(Mesh& mesh, Store& store) {
  for (const auto& p : mesh.unpublished_pinglists()) {
    if (!store.publish_pinglist(p.agent, p.version, p.targets)) return;
    mesh.pinglist_published(p.agent, p.version);
  }
}

// Where remote write's queue is kept on disk (config.hpp, remote_write_spool): beside the SQLite
// database by default, so the windows owed and the history they came from live and go together.
std::string remote_write_spool_path(const Config& cfg, const StoreInfo& store) {
  if (cfg.remote_write_spool == "off") return {};
  if (!cfg.remote_write_spool.empty()) return cfg.remote_write_spool;
  if (store.kind == "sqlite" && !store.location.empty() &&
      store.location.find(":memory:") == std::string::npos)
    return store.location + ".remote-write-spool";
  return "weft-remote-write.spool";
}

}  // namespace

Controller::Controller() = default;

Controller::~Controller() { stop(); }

// A controller is often started together with its store (a host booting, a cluster being
// restarted): exiting at once would leave the service manager to restart it blindly and the log to
// say little. So a store that cannot be reached yet (kStoreUnreachable: refused, timed out, cluster
// down) is tried again, 1 s doubling to 30 s, with one line per attempt saying why, until it
// answers, store_startup_timeout passes or request_stop() is called. A wrong URL or password, which
// no waiting cures, fails at once.
Result<std::unique_ptr<Store>> Controller::open_store_patiently(const Config& cfg) {
  using Clock = std::chrono::steady_clock;
  const auto limit = std::chrono::nanoseconds(cfg.store_startup_timeout_ns);
  const auto deadline = Clock::now() + limit;
  auto wait = std::chrono::seconds(1);
  for (int attempt = 1;; ++attempt) {
    auto store = open_store(cfg.store, redis::TlsFiles{cfg.store_ca, cfg.store_cert, cfg.store_key});
    if (store || store.error().code != kStoreUnreachable) {
      if (store && attempt > 1) log().info("store reached at attempt {}", attempt);
      return store;
    }
    auto now = Clock::now();
    if (limit.count() > 0 && now >= deadline)
      return fail("{} (gave up after store_startup_timeout, {} attempts)", store.error().message, attempt);
    auto next = limit.count() > 0 ? std::min<Clock::duration>(wait, deadline - now) : Clock::duration(wait);
    log().warn("store not reachable (attempt {}): {}; trying again in {:g} s", attempt, store.error().message,
               std::chrono::duration<double>(next).count());
    {
      std::unique_lock lk(mu_);
      if (cv_.wait_for(lk, next, [&] { return stopping_; }))
        return fail("stopped while waiting for the store: {}", store.error().message);
    }
    wait = std::min(wait * 2, std::chrono::seconds(30));
  }
}

Status Controller::start(Config cfg) {
  config_path_ = cfg.path;
  config_mtime_ns_ = file_mtime_ns(config_path_);
  topology_mtime_ns_ = file_mtime_ns(cfg.topology_file);
  auto store = open_store_patiently(cfg);
  if (!store) return std::unexpected(store.error());
  store_ = std::move(*store);
  auto shared = std::make_shared<const Config>(std::move(cfg));
  mesh_ = std::make_unique<Mesh>(shared);
  mesh_->set_store_info(store_->info());
  // Without `store:` the history goes to weft-history.db in the working directory: say where.
  if (auto si = store_->info(); si.kind == "sqlite")
    log().info("store: SQLite database {}{}", std::filesystem::absolute(si.location).string(),
               shared->store == Config{}.store ? " (the default; set store: in the config to choose)" : "");
  ingest_ = std::make_unique<Ingest>(*mesh_, *store_);
  // Queueing starts before the first report: every window accepted from now on reaches the receiver.
  remote_write_queue_ = std::make_unique<RemoteWriteQueue>();
  remote_write_queue_->set_capacity(shared->remote_write_queue_windows);
  remote_write_queue_->set_spool_path(remote_write_spool_path(*shared, store_->info()));
  remote_write_queue_->set_enabled(!shared->remote_write.empty());
  ingest_->set_remote_write_queue(remote_write_queue_.get());
  warn_about_credentials(*shared);

  // A restarted controller picks up where it stopped. The agents it knew come back first, replayed through
  // the same parser as POST /api/v1/register; then latest windows and dedup state, so an agent resending what
  // was already stored is not counted twice.
  size_t agents = 0;
  int64_t start_ns = now_ns();
  auto ast = store_->load_registrations([&](std::string_view body, int64_t registered_ns) {
    auto r = proto::parse_registration(body);
    if (!r) {
      log().warn("ignoring a stored registration that no longer parses: {}", r.error().message);
      return;
    }
    mesh_->restore_agent(*r, registered_ns, start_ns);
    ++agents;
  });
  if (!ast) return fail("restoring agents from the store: {}", ast.error().message);
  size_t restored = 0;
  auto st =
      store_->load_recent(now_ns() - kRestoreWindowNs,
                          [&](const std::string& src, std::span<const proto::WindowStats> ws, int64_t rx) {
                            mesh_->restore(src, ws, rx);
                            restored += ws.size();
                          });
  if (!st) return fail("restoring from the store: {}", st.error().message);
  if (restored)
    log().info("restored {} recent windows ({} pairs) from the store", restored, mesh_->pair_count());
  // Agents alive just before the restart stay up, so their pinglists do not change (a restart
  // must not change what agents probe); the others stay down until they report.
  if (agents) {
    size_t up = mesh_->settle_restored(now_ns());
    log().info("restored {} agents from the store: {} alive before the restart, {} down until they report",
               agents, up, agents - up);
  }

  // Which pinglist each agent was last handed, by whichever replica: listed from the start, not from
  // the agent's next pinglist change (the feed only carries changes made from now on).
  if (store_->shared()) {
    size_t handed = 0;
    auto pst = store_->load_pinglists([&](const std::string& name, uint64_t version, uint64_t targets) {
      mesh_->peer_pinglist(name, version, targets);
      ++handed;
    });
    if (!pst)
      log().warn("restoring the agents' pinglist versions from the store: {}", pst.error().message);
    else if (handed)
      log().info("restored the pinglist versions of {} agents from the store", handed);
  }

  // Other controllers sharing the store: follow what they take in (the feed was positioned when
  // the store opened, so nothing they did during the restore above is missed).
  sync_ = std::make_unique<ReplicaSync>(*mesh_, *store_);
  sync_->start();
  remote_write_ = std::make_unique<RemoteWriter>(*mesh_, *remote_write_queue_);
  remote_write_->start();
  if (auto s = start_http(*shared); !s) return s;
  threads_.emplace_back([this] { chores(); });
  return {};
}

void Controller::wait() {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return stopping_; });
}

void Controller::request_stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

bool Controller::stop_requested() {
  std::lock_guard lk(mu_);
  return stopping_;
}

void Controller::stop() {
  {
    std::lock_guard lk(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (server_) server_->stop();
  if (sync_) sync_->stop();
  if (remote_write_) remote_write_->stop();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  server_.reset();
  api_.reset();
}

Status Controller::reload() {
  std::lock_guard lk(reload_mu_);
  if (config_path_.empty()) return fail("no config file to reload");
  config_mtime_ns_ = file_mtime_ns(config_path_);
  topology_mtime_ns_ = file_mtime_ns(mesh_->config()->topology_file);
  Status tls_status;
  if (tls_) {
    // The same files read again (a renewed certificate is written over the old one).
    if (tls_status = tls_->reload(); tls_status)
      log().info("TLS: reloaded certificate {}", tls_->describe());
    else
      log().error("TLS reload failed, keeping the certificate in use: {}", tls_status.error().message);
  }
  auto cfg = load_config(config_path_);
  if (!cfg) {
    log().error("config reload failed, keeping the old config: {}", cfg.error().message);
    return std::unexpected(cfg.error());
  }
  auto old = mesh_->config();
  if (cfg->tls_cert != old->tls_cert || cfg->tls_key != old->tls_key ||
      cfg->tls_client_ca != old->tls_client_ca || cfg->plain_http != old->plain_http)
    log().warn("config reload: which TLS files (or plain_http) changed; takes effect after a restart");
  if (cfg->listen != old->listen) log().warn("config reload: 'listen' changed; takes effect after a restart");
  if (cfg->store != old->store) log().warn("config reload: 'store' changed; takes effect after a restart");
  cfg->listen = old->listen;
  cfg->store = old->store;
  topology_mtime_ns_ = file_mtime_ns(cfg->topology_file);
  warn_about_credentials(*cfg);
  mesh_->set_config(std::make_shared<const Config>(std::move(*cfg)));
  log().info("config reloaded from {}", config_path_);
  return tls_status;
}

void Controller::chores() {
  int64_t last_retention = 0, last_pinglist_try = 0;
  std::unique_lock lk(mu_);
  while (!stopping_) {
    cv_.wait_for(lk, std::chrono::milliseconds(500));
    if (stopping_) break;
    lk.unlock();
    int64_t now = now_ns();
    for (const auto& name : mesh_->sweep(now, sync_->feed_trusted_since_ns()))
      log().warn("agent {} is down (no report in time)", name);
    if (store_->shared() && (store_->info().healthy || now - last_pinglist_try > kPinglistRetryNs)) {
      last_pinglist_try = now;
      publish_handed_pinglists(*mesh_, *store_);
    }
    auto cfg = mesh_->config();
    if (int64_t m = file_mtime_ns(config_path_); m != 0 && m != config_mtime_ns_)
      (void)reload();
    else if (int64_t t = file_mtime_ns(cfg->topology_file); t != 0 && t != topology_mtime_ns_)
      (void)reload();
    cfg = mesh_->config();
    if (now - last_retention > 60'000'000'000) {
      last_retention = now;
      if (auto st = store_->apply_retention(now - cfg->retention_ns); !st)
        log().warn("retention: {}", st.error().message);
    }
    mesh_->set_store_info(store_->info());
    lk.lock();
  }
}

// The API on the project's event-driven server: TLS when configured, one listener per `listen`.
Status Controller::start_http(const Config& cfg) {
  api_ = std::make_unique<HttpApi>(*mesh_, *store_, *ingest_);
  api_->set_remote_write_queue(remote_write_queue_.get());
  auto routes = api_->routes();
  auto options = api_->server_options(cfg);
  if (!cfg.tls_cert.empty()) {
    auto tls = net::http::TlsServerContext::load({cfg.tls_cert, cfg.tls_key, cfg.tls_client_ca});
    if (!tls) return std::unexpected(tls.error());
    tls_ = *tls;
    options.tls = tls_;
    log().info("TLS: certificate {}{}", tls_->describe(),
               cfg.tls_client_ca.empty()
                   ? ""
                   : fmt::format("; client certificates signed by {}", cfg.tls_client_ca));
  }
  server_ = std::make_unique<net::http::Server>(std::move(routes), std::move(options));
  api_->set_server(server_.get(), tls_ != nullptr);
  for (const auto& addr : cfg.listen) {
    // "HOST:PORT" or "[IPv6]:PORT" (net/address.hpp parses it); port 0 picks a free port (tests,
    // benchmarks). The config file already requires an explicit port; one given in code must too.
    auto hp = net::split_host_port(addr, 0, /*allow_port_zero=*/true);
    if (!hp) return fail("listen '{}': not HOST:PORT: {}", addr, hp.error().message);
    if (!addr.ends_with(":" + std::to_string(hp->second))) return fail("listen '{}': not HOST:PORT", addr);
    auto sa = net::resolve(hp->first, hp->second);
    if (!sa) return fail("listen '{}': {}", addr, sa.error().message);
    auto port = server_->listen(*sa);
    if (!port) return fail("cannot listen on {}: {}", addr, port.error().message);
    ports_.push_back(*port);
    net::SocketAddress bound = *sa;
    bound.set_port(*port);
    log().info("controller listening on {}://{}/", tls_ ? "https" : "http", bound.to_string());
  }
  if (auto st = server_->start(); !st) return st;
  log().info("controller HTTP: up to {} connections ({} per client address), {} agent + {} API workers",
             server_->max_connections(), cfg.http_max_connections_per_address, cfg.http_threads,
             cfg.http_api_threads);
  return {};
}

}  // namespace weft::controller
