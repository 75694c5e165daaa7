#include "agent/agent.hpp"

#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <utility>

#include "agent/controller_url.hpp"
#include "agent/rdma_endpoint.hpp"
#include "agent/rdma_pinglist.hpp"
#include "base/log.hpp"
#include "base/proc_stats.hpp"
#include "probe/prober.hpp"
#include "probe/responder.hpp"
#include "proto/defaults.hpp"
#include "proto/pinglist.hpp"
#include "proto/register_reply.hpp"
#include "proto/registration.hpp"
#include "proto/report_reply.hpp"

#ifndef WEFT_VERSION
#define WEFT_VERSION "0.1.0"
#endif

namespace weft::agent {
namespace {

using Clock = std::chrono::steady_clock;

int64_t unix_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The local address the kernel would use to reach the controller: what peers should probe.
Result<std::string> route_source_address(const ControllerUrl& u) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_DGRAM;
  if (int rc = getaddrinfo(u.host.c_str(), std::to_string(u.port).c_str(), &hints, &res); rc != 0)
    return fail("resolve {}: {}", u.host, gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  int fd = ::socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail_errno("socket");
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  bool ok = ::connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0;
  int err = errno;
  ::close(fd);
  if (!ok) return fail_errno(fmt::format("find the local address towards {}", u.host), err);
  char buf[INET6_ADDRSTRLEN] = {};
  const void* a = ss.ss_family == AF_INET
                      ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&ss)->sin_addr)
                      : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr);
  inet_ntop(ss.ss_family, a, buf, sizeof buf);
  return std::string(buf);
}

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

}  // namespace

// One prober per protocol, run by its own thread and restarted when it dies.
struct ProberRun {
  proto::Protocol protocol;
  std::thread thread;
  std::mutex mu;
  probe::ProberConfig config;
  std::vector<probe::Target> targets;
  probe::Prober* current = nullptr;  // while run() is active
  bool reconfigure = false;          // a planned stop to apply a new config
  uint64_t sent_base = 0;            // probes sent by earlier incarnations
};

// One RDMA engine (one rail), run by its own thread and re-created when it dies.
struct RdmaRun {
  size_t rail = 0;
  probe::RdmaEngineConfig config;
  std::thread thread;
  std::mutex mu;
  std::unique_ptr<probe::RdmaEngine> ready;     // made by start(), not yet run
  probe::RdmaEngine* current = nullptr;         // while run() is active
  std::optional<proto::RdmaEndpoint> endpoint;  // its address while it runs (registered)
  std::optional<probe::RdmaSchedule> schedule;  // from the pinglist
  std::vector<probe::RdmaTarget> targets;       // from the pinglist
  uint64_t sent_base = 0;                       // probes sent by earlier engines
};

struct Agent::Impl {
  AgentConfig cfg;
  ControllerUrl url;                // the one in use, of `urls`
  std::vector<ControllerUrl> urls;  // --controller URL[,URL...]: replicas sharing one store
  size_t url_index = 0;
  Outbox outbox;
  std::unique_ptr<httplib::Client> http;
  httplib::Headers headers;

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::thread control;
  std::thread responder_thread;
  std::unique_ptr<probe::Responder> responder;
  std::mutex responder_mu;

  std::map<proto::Protocol, std::unique_ptr<ProberRun>> probers;
  std::mutex probers_mu;

  std::vector<std::unique_ptr<RdmaRun>> rdma_runs;  // fixed after start(), by rail
  bool reregister = false;                          // (under mu) an RDMA address changed: tell the controller

  std::mutex collect_mu;  // windows finished by probers, not yet batched
  std::vector<proto::WindowStats> collected;
  std::vector<proto::AlarmEvent> alarms;  // not yet reported

  std::atomic<uint64_t> windows_made{0}, windows_delivered{0}, reports_sent{0}, report_failures{0},
      restarts{0};
  std::atomic<uint64_t> pl_version{0};
  uint64_t seq = 0;
  // Consecutive "malformed" answers for the batch at the head of the outbox (see deliver()).
  static constexpr int kContentRefusalsBeforeSetAside = 5;
  int content_refusals = 0;
  // Until the register reply says otherwise.
  int64_t report_interval_ns = proto::defaults::kReportInterval.count();
  int64_t sync_interval_ns = proto::defaults::kPinglistSync.count();
  bool registered = false;

  // health
  double last_cpu = 0;
  Clock::time_point last_health_at = Clock::now();
  uint64_t last_probes = 0;

  explicit Impl(AgentConfig c) : cfg(std::move(c)), outbox(cfg.outbox) {}

  void addresses_changed() {
    {
      std::lock_guard lk(mu);
      reregister = true;
    }
    cv.notify_all();
  }

  bool sleep_for(std::chrono::nanoseconds d) {
    std::unique_lock lk(mu);
    return !cv.wait_for(lk, d, [&] { return stopping; });
  }
  bool is_stopping() {
    std::lock_guard lk(mu);
    return stopping;
  }

  void alarm(std::string kind, std::string message) {
    log().warn("alarm {}: {}", kind, message);
    std::lock_guard lk(collect_mu);
    if (alarms.size() < 100) alarms.push_back({std::move(kind), std::move(message), unix_ns()});
  }

  // ---- responder ----
  void responder_loop() {
    while (!is_stopping()) {
      probe::ResponderConfig rc;
      rc.listen_address = cfg.address;
      rc.udp_port = cfg.udp_port;
      rc.tcp_port = cfg.tcp_port;
      rc.tcp_idle_timeout = cfg.tcp_idle_timeout;
      auto r = probe::Responder::create(rc);
      if (!r) {
        alarm("responder_failed", r.error().message);
        if (!sleep_for(std::chrono::seconds(2))) break;
        continue;
      }
      {
        std::lock_guard lk(responder_mu);
        responder = std::move(*r);
      }
      auto st = responder->run();
      if (is_stopping()) break;
      alarm("responder_restarted", st ? "run() returned" : st.error().message);
      {
        std::lock_guard lk(responder_mu);
        responder.reset();
      }
      if (!sleep_for(std::chrono::seconds(1))) break;
    }
  }

  // ---- probers ----
  void prober_loop(ProberRun& r) {
    while (!is_stopping()) {
      probe::ProberConfig pc;
      std::vector<probe::Target> targets;
      {
        std::lock_guard lk(r.mu);
        pc = r.config;
        targets = r.targets;
      }
      auto p = probe::Prober::create(pc);
      if (!p) {
        alarm("prober_failed", fmt::format("{}: {}", proto::to_string(r.protocol), p.error().message));
        restarts++;
        if (!sleep_for(std::chrono::seconds(2))) break;
        continue;
      }
      (*p)->set_targets(std::move(targets));
      {
        std::lock_guard lk(r.mu);
        r.current = p->get();
        // Targets may have changed between the copy and now: give it the latest.
        (*p)->set_targets(r.targets);
      }
      if (is_stopping()) break;
      probe::Prober* prober = p->get();
      uint64_t unsent_seen = 0;
      int64_t unsent_alarm_at = 0;
      auto st = (*p)->run([&, this](proto::WindowStats&& w) {
        windows_made++;
        {
          std::lock_guard lk(collect_mu);
          collected.push_back(std::move(w));
        }
        // Probes this host could not send (out of descriptors...) are in no window, so the mesh
        // does not blame the network for them; the agent says so instead (at most once a minute).
        const uint64_t unsent = prober->counters().unsent;
        if (unsent > unsent_seen && unix_ns() - unsent_alarm_at > 60'000'000'000) {
          unsent_alarm_at = unix_ns();
          alarm("probe_unsent",
                fmt::format("{}: {} probes could not leave this host ({}); they count as no "
                            "loss, and these targets have no data meanwhile",
                            proto::to_string(r.protocol), unsent - unsent_seen, prober->last_local_error()));
        }
        unsent_seen = unsent;
      });
      bool planned;
      {
        std::lock_guard lk(r.mu);
        r.current = nullptr;
        r.sent_base += (*p)->counters().sent;
        planned = r.reconfigure;
        r.reconfigure = false;
      }
      if (is_stopping()) break;
      if (planned) continue;
      restarts++;
      alarm("prober_restarted", fmt::format("{} prober stopped: {}", proto::to_string(r.protocol),
                                            st ? std::string("run() returned") : st.error().message));
      if (!sleep_for(std::chrono::seconds(1))) break;
    }
  }

  // ---- RDMA engines ----
  void rdma_loop(RdmaRun& r) {
    // A device that is not there stays away for a while: retry less and less often (2 s .. 1 min)
    // rather than raise an alarm every two seconds.
    auto retry = std::chrono::seconds(2);
    while (!is_stopping()) {
      std::unique_ptr<probe::RdmaEngine> e;
      {
        std::lock_guard lk(r.mu);
        e = std::move(r.ready);
      }
      if (!e) {
        auto made = probe::RdmaEngine::create(r.config);
        if (!made) {
          alarm("rdma_engine_failed",
                fmt::format("rdma rail {} ({}): {}", r.rail, r.config.device, made.error().message));
          restarts++;
          if (!sleep_for(retry)) break;
          retry = std::min<std::chrono::seconds>(retry * 2, std::chrono::seconds(60));
          continue;
        }
        e = std::move(*made);
      }
      retry = std::chrono::seconds(2);
      bool changed;
      {
        std::lock_guard lk(r.mu);
        if (r.schedule) (void)e->set_schedule(*r.schedule);
        e->set_targets(r.targets);
        auto ep = endpoint_of(e->address());
        changed = r.endpoint != ep;  // start() already registered the engine it made
        r.endpoint = ep;
        r.current = e.get();
      }
      log().info("rdma rail {}: engine on {}, timestamps {}{}", r.rail, e->address().to_string(),
                 proto::to_string(e->timestamp_source()),
                 e->timestamp_note().empty() ? "" : " (" + e->timestamp_note() + ")");
      if (changed) addresses_changed();
      // Agent::stop() sets stopping, then stops r.current. Either it saw this engine as current,
      // or stopping was set before this check; the engine keeps a stop() made before run().
      if (is_stopping()) e->stop();
      auto st = e->run([this](proto::WindowStats&& w) {
        windows_made++;
        std::lock_guard lk(collect_mu);
        collected.push_back(std::move(w));
      });
      {
        std::lock_guard lk(r.mu);
        r.current = nullptr;
        r.endpoint.reset();
        r.sent_base += e->counters().sent;
      }
      if (is_stopping()) break;
      e.reset();  // the QP goes; its successor gets a new QPN, which peers learn from the pinglist
      restarts++;
      alarm("rdma_engine_restarted", fmt::format("rdma rail {} ({}) stopped: {}", r.rail, r.config.device,
                                                 st ? std::string("run() returned") : st.error().message));
      addresses_changed();
      if (!sleep_for(std::chrono::seconds(1))) break;
    }
  }

  // The running engines' addresses, rail 0 first. Rails are positions, so the list ends at the
  // first rail whose engine is not running (the ones after it are registered once it is back).
  std::vector<proto::RdmaEndpoint> rdma_endpoints() {
    std::vector<proto::RdmaEndpoint> out;
    for (auto& r : rdma_runs) {
      std::lock_guard lk(r->mu);
      if (!r->endpoint) break;
      out.push_back(*r->endpoint);
    }
    return out;
  }

  void apply_rdma_pinglist(const proto::ProtocolPinglist* pp, int64_t window_ns) {
    std::vector<std::vector<probe::RdmaTarget>> by_rail(rdma_runs.size());
    std::optional<probe::RdmaSchedule> schedule;
    if (pp) {
      by_rail = rdma_targets_by_rail(pp->targets, rdma_runs.size());
      schedule =
          probe::RdmaSchedule{std::chrono::nanoseconds(pp->interval_ns),
                              std::chrono::nanoseconds(pp->timeout_ns), std::chrono::nanoseconds(window_ns)};
    }
    for (auto& r : rdma_runs) {
      std::lock_guard lk(r->mu);
      r->targets = by_rail[r->rail];
      if (schedule) r->schedule = schedule;
      if (!r->current) continue;
      if (schedule)
        if (auto st = r->current->set_schedule(*schedule); !st)
          log().error("pinglist: rdma: {}", st.error().message);
      r->current->set_targets(r->targets);
    }
    for (auto& r : rdma_runs)
      log().info("rdma rail {} pinglist: {} targets", r->rail, by_rail[r->rail].size());
  }

  uint64_t probes_sent() {
    uint64_t n = 0;
    {
      std::lock_guard lk(probers_mu);
      for (auto& [p, r] : probers) {
        std::lock_guard rl(r->mu);
        n += r->sent_base + (r->current ? r->current->counters().sent : 0);
      }
    }
    for (auto& r : rdma_runs) {
      std::lock_guard rl(r->mu);
      n += r->sent_base + (r->current ? r->current->counters().sent : 0);
    }
    return n;
  }

  // How often to report and to ask for the pinglist: what the controller says, within floors that
  // keep a misconfigured controller from being flooded.
  void set_intervals(int64_t report_ns, int64_t sync_ns) {
    report_interval_ns = std::max<int64_t>(100'000'000, report_ns);
    sync_interval_ns = std::max<int64_t>(500'000'000, sync_ns);
  }

  // `pl` was decoded strictly (proto/pinglist.hpp): every field is there and in range.
  void apply_pinglist(const proto::Pinglist& pl) {
    const int64_t window_ns = pl.window_ns;
    set_intervals(pl.report_interval_ns, pl.sync_interval_ns);
    std::map<proto::Protocol, std::pair<probe::ProberConfig, std::vector<probe::Target>>> wanted;
    const proto::ProtocolPinglist* rdma_plan = nullptr;
    for (const auto& pp : pl.protocols) {
      if (std::find(cfg.protocols.begin(), cfg.protocols.end(), pp.protocol) == cfg.protocols.end()) continue;
      if (pp.protocol == proto::Protocol::rdma) {  // the engines, not a Prober
        rdma_plan = &pp;
        continue;
      }
      probe::ProberConfig pc;
      pc.protocol = pp.protocol;
      pc.bind_address = cfg.address;
      pc.interval = std::chrono::nanoseconds(pp.interval_ns);
      pc.timeout = std::chrono::nanoseconds(pp.timeout_ns);
      pc.window = std::chrono::nanoseconds(window_ns);
      std::vector<probe::Target> targets;
      targets.reserve(pp.targets.size());
      for (const auto& t : pp.targets) targets.push_back({t.name, t.host, t.port});
      wanted[pp.protocol] = {pc, std::move(targets)};
    }
    if (!rdma_runs.empty()) apply_rdma_pinglist(rdma_plan, window_ns);
    std::lock_guard lk(probers_mu);
    for (auto& [proto, run] : probers)
      if (!wanted.contains(proto)) {  // no longer asked for: keep the thread, probe nobody
        std::lock_guard rl(run->mu);
        run->targets.clear();
        if (run->current) run->current->set_targets({});
      }
    for (auto& [proto, want] : wanted) {
      auto& [pc, targets] = want;
      auto it = probers.find(proto);
      if (it == probers.end()) {
        auto run = std::make_unique<ProberRun>();
        run->protocol = proto;
        run->config = pc;
        run->targets = targets;
        ProberRun* raw = run.get();
        run->thread = std::thread([this, raw] { prober_loop(*raw); });
        probers.emplace(proto, std::move(run));
        log().info("{} prober started with {} targets", proto::to_string(proto), targets.size());
        continue;
      }
      ProberRun& run = *it->second;
      std::lock_guard rl(run.mu);
      bool same = run.config.interval == pc.interval && run.config.timeout == pc.timeout &&
                  run.config.window == pc.window && run.config.bind_address == pc.bind_address;
      run.targets = targets;
      if (!same) {
        run.config = pc;
        if (run.current) {
          run.reconfigure = true;
          run.current->stop();
        }
      } else if (run.current) {
        run.current->set_targets(targets);
      }
      log().info("{} pinglist: {} targets", proto::to_string(proto), targets.size());
    }
  }

  // ---- controller conversation ----
  // The HTTP client for urls[url_index] (control thread only, like every use of `http`).
  void connect_controller() {
    url = urls[url_index];
    http = std::make_unique<httplib::Client>(url.host, url.port);
    http->set_connection_timeout(2, 0);
    http->set_read_timeout(10, 0);
    http->set_write_timeout(10, 0);
    http->set_keep_alive(true);
    http->set_tcp_nodelay(true);  // headers and body go out in two writes: no Nagle delay
  }
  // Moves on to the next replica after an unreachable one or a 503 (its store is down). The new
  // replica may not have this agent in its memory yet, so the agent registers there first; queued
  // batches stay in the outbox and go to it (the store drops what another replica already took).
  void next_controller() {
    if (urls.size() < 2) return;
    url_index = (url_index + 1) % urls.size();
    connect_controller();
    registered = false;
    log().warn("controller: trying replica {}:{}", url.host, url.port);
  }

  bool do_register() {
    {
      std::lock_guard lk(mu);
      reregister = false;  // this registration carries the addresses as they are now
    }
    proto::Registration reg{cfg.name,     {cfg.address}, cfg.protocols,   WEFT_VERSION,
                            cfg.udp_port, cfg.tcp_port,  rdma_endpoints()};
    auto res = http->Post("/api/v1/register", headers, proto::registration_json(reg), "application/json");
    if (!res) {
      log().warn("register: controller unreachable ({})", httplib::to_string(res.error()));
      next_controller();
      return false;
    }
    if (res->status == 503) next_controller();
    if (res->status != 200) {
      log().error("register refused ({}): {}", res->status, res->body);
      return false;
    }
    if (auto reply = proto::decode_register_reply(res->body); reply)
      set_intervals(reply->report_interval_ns, reply->sync_interval_ns);
    else
      log().warn("register: {} (keeping the intervals as they were)", reply.error().message);
    log().info("registered with {} as {} ({}{})", cfg.controller_url, cfg.name, cfg.address,
               reg.rdma.empty() ? "" : fmt::format(", {} rdma rails", reg.rdma.size()));
    registered = true;
    return true;
  }

  void sync_pinglist() {
    auto res =
        http->Get(fmt::format("/api/v1/pinglist?agent={}&version={}", cfg.name, pl_version.load()), headers);
    if (!res) {
      next_controller();
      return;
    }
    if (res->status == 409) {
      registered = false;
      return;
    }
    if (res->status != 200) {
      log().warn("pinglist: HTTP {}: {}", res->status, res->body);
      return;
    }
    auto answer = proto::decode_pinglist(res->body);
    if (!answer) {  // the previous pinglist stays in force
      log().error("pinglist: malformed answer: {}", answer.error().message);
      return;
    }
    if (answer->unchanged) return;
    for (const auto& name : answer->skipped_protocols)
      log().warn("pinglist: protocol '{}' is unknown to this agent; skipped", name);
    apply_pinglist(answer->pinglist);
    pl_version = answer->pinglist.version;
  }

  proto::Health health() {
    proto::Health h;
    auto now = Clock::now();
    double dt = std::chrono::duration<double>(now - last_health_at).count();
    double cpu = static_cast<double>(self_cpu_ns()) / 1e9;
    uint64_t probes = probes_sent();
    if (dt > 0.05) {
      h.cpu_percent = std::max(0.0, (cpu - last_cpu) / dt * 100.0);
      h.probes_per_s = probes >= last_probes ? static_cast<double>(probes - last_probes) / dt : 0;
      last_cpu = cpu;
      last_probes = probes;
      last_health_at = now;
    }
    h.rss_kb = static_cast<uint64_t>(std::max<int64_t>(0, read_proc_stats().rss_kb));
    // Windows the controller will not see: dropped by the bounded outbox, or set aside as refused.
    h.dropped_windows = outbox.dropped_windows() + outbox.refused_windows();
    h.spooled_windows = outbox.pending_windows();
    h.prober_restarts = restarts.load();
    return h;
  }

  // Sends what the outbox holds, oldest first; stops at the first failure (retried next tick).
  void deliver(bool& pinglist_changed) {
    for (int sent = 0; sent < 500 && !is_stopping(); ++sent) {
      auto batch = outbox.front();
      proto::Report rep;
      rep.agent = cfg.name;
      rep.seq = batch ? batch->seq : ++seq;
      rep.health = health();
      {
        std::lock_guard lk(collect_mu);
        rep.alarms = alarms;
      }
      if (batch)
        rep.windows = std::move(batch->windows);
      else if (sent > 0)
        return;  // a heartbeat only when nothing else went out this tick
      auto res = http->Post("/api/v1/report", headers, proto::encode_binary(rep),
                            std::string(proto::kBinaryContentType));
      const int status = res ? res->status : 0;
      if (status == 0 || status == 503) next_controller();  // the batch stays queued for the next one
      if (status == 409) {  // the controller forgot us (restart): register and resend
        registered = false;
        return;
      }
      if (status != 200) {
        report_failures++;
        // Nothing measured is lost to a refusal (issue 14): a wrong token, an overloaded or
        // restarting controller, a body limit are the controller's to fix, so the batch stays at
        // the head of the outbox (which spools and is bounded) and is sent again. Only a batch the
        // controller calls malformed, five times running, is set aside (kept on disk, counted), since
        // it would otherwise block every batch behind it for good.
        const bool malformed = status == 400 || status == 415 || status == 422;
        if (malformed && batch && ++content_refusals >= kContentRefusalsBeforeSetAside) {
          content_refusals = 0;
          std::string kept = outbox.set_aside(batch->seq);
          log().error("report: batch {} ({} windows) refused as malformed (HTTP {}: {}); {}", rep.seq,
                      rep.windows.size(), status, res->body.substr(0, 300),
                      kept.empty() ? "no spool directory: dropped" : "kept in " + kept);
          return;
        }
        if (report_failures % 10 == 1)
          log().warn("report: {} ({}); keeping {} windows in the outbox and retrying",
                     res ? fmt::format("refused with HTTP {}", status) : "controller unreachable",
                     res ? res->body.substr(0, 300) : httplib::to_string(res.error()),
                     outbox.pending_windows());
        return;
      }
      content_refusals = 0;
      reports_sent++;
      {
        std::lock_guard lk(collect_mu);
        alarms.erase(alarms.begin(),
                     alarms.begin() + static_cast<ptrdiff_t>(std::min(alarms.size(), rep.alarms.size())));
      }
      if (batch) {
        windows_delivered += rep.windows.size();
        outbox.pop(batch->seq);
      }
      if (auto reply = proto::decode_report_reply(res->body);
          reply && reply->pinglist_version != pl_version.load())
        pinglist_changed = true;
      if (!batch) return;
    }
  }

  void flush_collected() {
    std::vector<proto::WindowStats> ws;
    {
      std::lock_guard lk(collect_mu);
      ws.swap(collected);
    }
    outbox.push(std::move(ws));
  }

  void control_loop() {
    std::mt19937_64 rng(std::random_device{}());
    auto jitter = [&](int64_t ns) {
      std::uniform_real_distribution<double> d(0.8, 1.2);
      return std::chrono::nanoseconds(static_cast<int64_t>(static_cast<double>(ns) * d(rng)));
    };
    auto backoff = std::chrono::milliseconds(250);
    while (!is_stopping()) {
      if (!registered) {
        if (!do_register()) {
          if (!sleep_for(backoff)) break;
          backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
          flush_collected();  // keep windows moving into the outbox (and spool) meanwhile
          continue;
        }
        backoff = std::chrono::milliseconds(250);
        sync_pinglist();
      }
      auto next_sync = Clock::now() + jitter(sync_interval_ns);
      auto next_report = Clock::now() + std::chrono::nanoseconds(report_interval_ns);
      while (registered && !is_stopping()) {
        auto wake = std::min(next_sync, next_report);
        bool again = false;
        {
          std::unique_lock lk(mu);
          cv.wait_until(lk, wake, [&] { return stopping || reregister; });
          again = std::exchange(reregister, false);
        }
        if (is_stopping()) break;
        if (again) {  // an RDMA engine came or went: register its new address
          registered = false;
          break;
        }
        auto now = Clock::now();
        bool changed = false;
        if (now >= next_report) {
          flush_collected();
          deliver(changed);
          next_report = now + std::chrono::nanoseconds(report_interval_ns);
        }
        if (changed || now >= next_sync) {
          sync_pinglist();
          next_sync = Clock::now() + jitter(sync_interval_ns);
        }
      }
    }
  }
};

Agent::Agent(AgentConfig cfg) : impl_(std::make_unique<Impl>(std::move(cfg))) {}

Agent::~Agent() { stop(); }

Status Agent::start() {
  auto& I = *impl_;
  auto urls = parse_controller_urls(I.cfg.controller_url);
  if (!urls) return std::unexpected(urls.error());
  I.urls = std::move(*urls);
  I.url = I.urls.front();
  if (I.cfg.name.empty()) I.cfg.name = host_name();
  if (I.cfg.address.empty()) {
    auto a = route_source_address(I.url);
    if (!a) return fail("cannot pick the agent's address (use --address): {}", a.error().message);
    I.cfg.address = *a;
  }
  if (auto st = I.outbox.open(); !st) return st;
  I.connect_controller();
  if (!I.cfg.token.empty()) I.headers.emplace("Authorization", "Bearer " + I.cfg.token);
  I.last_cpu = static_cast<double>(self_cpu_ns()) / 1e9;
  if (!I.cfg.rdma.empty() && std::find(I.cfg.protocols.begin(), I.cfg.protocols.end(),
                                       proto::Protocol::rdma) == I.cfg.protocols.end())
    I.cfg.protocols.push_back(proto::Protocol::rdma);
  for (size_t i = 0; i < I.cfg.rdma.size(); ++i) {
    auto run = std::make_unique<RdmaRun>();
    run->rail = i;
    run->config = I.cfg.rdma[i];
    // Made here so that the first registration already carries the address; one that fails is
    // retried by its thread (with an alarm), like a prober that cannot start.
    auto e = probe::RdmaEngine::create(run->config);
    if (e)
      run->ready = std::move(*e);
    else
      I.alarm("rdma_engine_failed",
              fmt::format("rdma rail {} ({}): {}", i, run->config.device, e.error().message));
    if (run->ready) run->endpoint = endpoint_of(run->ready->address());
    I.rdma_runs.push_back(std::move(run));
  }
  for (auto& r : I.rdma_runs) {
    RdmaRun* raw = r.get();
    r->thread = std::thread([&I, raw] { I.rdma_loop(*raw); });
  }
  I.responder_thread = std::thread([&I] { I.responder_loop(); });
  I.control = std::thread([&I] { I.control_loop(); });
  return {};
}

void Agent::stop() {
  auto& I = *impl_;
  {
    std::lock_guard lk(I.mu);
    if (I.stopping) return;
    I.stopping = true;
  }
  I.cv.notify_all();
  {
    std::lock_guard lk(I.responder_mu);
    if (I.responder) I.responder->stop();
  }
  {
    std::lock_guard lk(I.probers_mu);
    for (auto& [p, r] : I.probers) {
      std::lock_guard rl(r->mu);
      if (r->current) r->current->stop();
    }
  }
  for (auto& r : I.rdma_runs) {
    std::lock_guard rl(r->mu);
    if (r->current) r->current->stop();
  }
  if (I.control.joinable()) I.control.join();
  if (I.responder_thread.joinable()) I.responder_thread.join();
  for (auto& [p, r] : I.probers)
    if (r->thread.joinable()) r->thread.join();
  for (auto& r : I.rdma_runs)
    if (r->thread.joinable()) r->thread.join();
  // Whatever was not delivered goes to the spool, so a restarted agent sends it later.
  I.flush_collected();
  I.outbox.spill_all();
}

AgentStats Agent::stats() const {
  auto& I = *impl_;
  return {I.windows_made.load(),      I.windows_delivered.load(), I.reports_sent.load(),
          I.report_failures.load(),   I.restarts.load(),          I.pl_version.load(),
          I.outbox.pending_windows(), I.outbox.dropped_windows(), I.outbox.refused_windows()};
}

}  // namespace weft::agent
