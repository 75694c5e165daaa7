#include "agent/agent.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include "agent/controller_client.hpp"
#include "agent/health_sampler.hpp"
#include "agent/local_host.hpp"
#include "agent/prober_runs.hpp"
#include "agent/rdma_rails.hpp"
#include "agent/report_delivery.hpp"
#include "agent/run_state.hpp"
#include "agent/supervisor.hpp"
#include "base/log.hpp"
#include "probe/ip/responder.hpp"
#include "proto/defaults.hpp"
#include "proto/pinglist.hpp"
#include "proto/register_reply.hpp"
#include "proto/registration.hpp"

#ifndef WEFT_VERSION
#define WEFT_VERSION "0.1.0"
#endif

// The agent's parts, each in its own file: RunState (what the threads share), ProberRuns (udp/tcp
// probers), RdmaRails (RDMA engines), ControllerClient (HTTP to the controller's replicas), Outbox
// and ReportDelivery (windows to the controller), HealthSampler. This file holds the responder
// thread and the control loop that registers, keeps the pinglist in sync and reports.
namespace weft::agent {

using Clock = std::chrono::steady_clock;

struct Agent::Impl {
  AgentConfig cfg;
  RunState state;  // first: the parts below keep a reference to it
  Outbox outbox;
  ControllerClient client;
  ReportDelivery delivery{state, outbox, client};
  HealthSampler health;
  ProberRuns probers{state};
  RdmaRails rails{state};

  std::thread control;
  std::thread responder_thread;
  std::unique_ptr<probe::Responder> responder;
  std::mutex responder_mu;

  // Control thread only, but pl_version is also read by stats().
  std::atomic<uint64_t> pl_version{0};
  // Until the register reply says otherwise.
  Duration report_interval = proto::defaults::kReportInterval;
  Duration sync_interval = proto::defaults::kPinglistSync;
  bool registered = false;

  explicit Impl(AgentConfig c) : cfg(std::move(c)), outbox(cfg.outbox) {}

  // ---- responder ----
  void responder_loop() {
    Supervisor supervisor(state, "responder", "responder");
    while (!state.is_stopping()) {
      probe::ResponderConfig rc;
      rc.listen_address = cfg.address;
      rc.udp_port = cfg.udp_port;
      rc.tcp_port = cfg.tcp_port;
      rc.tcp_idle_timeout = cfg.tcp_idle_timeout;
      auto r = probe::Responder::create(rc);
      if (!r) {
        if (!supervisor.failed(r.error().message)) break;
        continue;
      }
      {
        std::lock_guard lk(responder_mu);
        responder = std::move(*r);
      }
      supervisor.running();
      auto st = responder->run();
      if (state.is_stopping()) break;
      {
        std::lock_guard lk(responder_mu);
        responder.reset();
      }
      if (!supervisor.stopped(st ? "run() returned" : st.error().message)) break;
    }
  }

  // ---- registration and pinglist sync ----
  void next_controller() {
    if (client.next_replica()) registered = false;
  }

  // How often to report and to ask for the pinglist: what the controller says, within floors that
  // keep a misconfigured controller from being flooded.
  void set_intervals(Duration report, Duration sync) {
    using namespace std::chrono_literals;
    report_interval = std::max<Duration>(100ms, report);
    sync_interval = std::max<Duration>(500ms, sync);
  }

  bool do_register() {
    state.clear_reregister();  // this registration carries the addresses as they are now
    proto::Registration reg{cfg.name,     {cfg.address}, cfg.protocols,    WEFT_VERSION,
                            cfg.udp_port, cfg.tcp_port,  rails.endpoints()};
    auto res = client.post("/api/v1/register", proto::registration_json(reg), "application/json");
    if (res.status == 0) {
      log().warn("register: controller unreachable ({})", res.error);
      next_controller();
      return false;
    }
    if (res.status == 503) next_controller();
    if (res.status != 200) {
      log().error("register refused ({}): {}", res.status, res.body);
      return false;
    }
    if (auto reply = proto::decode_register_reply(res.body); reply)
      set_intervals(reply->report_interval, reply->sync_interval);
    else
      log().warn("register: {} (keeping the intervals as they were)", reply.error().message);
    log().info("registered with {} as {} ({}{})", cfg.controller_url, cfg.name, cfg.address,
               reg.rdma.empty() ? "" : fmt::format(", {} rdma rails", reg.rdma.size()));
    registered = true;
    return true;
  }

  // `pl` was decoded strictly (proto/pinglist.hpp): every field is there and in range.
  void apply_pinglist(const proto::Pinglist& pl) {
    set_intervals(pl.report_interval, pl.sync_interval);
    std::map<proto::Protocol, ProberPlan> wanted;
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
      pc.interval = pp.interval;
      pc.timeout = pp.timeout;
      pc.flows = pp.flows;
      // Each UDP flow's path is traced every few minutes (and when it starts losing).
      if (pp.protocol == proto::Protocol::udp) pc.trace_interval = std::chrono::minutes(5);
      pc.window = pl.window;
      std::vector<probe::Target> targets;
      targets.reserve(pp.targets.size());
      for (const auto& t : pp.targets) targets.push_back({t.name, t.host, t.port});
      wanted[pp.protocol] = {pc, std::move(targets)};
    }
    if (!rails.empty()) rails.apply(rdma_plan, pl.window);
    probers.apply(std::move(wanted));
  }

  void sync_pinglist() {
    auto res = client.get(fmt::format("/api/v1/pinglist?agent={}&version={}", cfg.name, pl_version.load()));
    if (res.status == 0) {
      next_controller();
      return;
    }
    if (res.status == 409) {
      registered = false;
      return;
    }
    if (res.status != 200) {
      log().warn("pinglist: HTTP {}: {}", res.status, res.body);
      return;
    }
    auto answer = proto::decode_pinglist(res.body);
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

  // ---- reports ----
  void flush_collected() { outbox.push(state.take_collected()); }

  bool deliver() {
    auto out = delivery.deliver(cfg.name, pl_version.load(), [this] {
      return health.sample(probers.probes_sent() + rails.probes_sent(), outbox, state.restarts.load());
    });
    if (out.must_register) registered = false;
    return out.pinglist_changed;
  }

  void control_loop() {
    std::mt19937_64 rng(std::random_device{}());
    auto jitter = [&](Duration d) {  // a thousand agents do not ask at the same instant
      std::uniform_real_distribution<double> f(0.8, 1.2);
      return Duration(static_cast<int64_t>(static_cast<double>(d.count()) * f(rng)));
    };
    auto backoff = std::chrono::milliseconds(250);
    while (!state.is_stopping()) {
      if (!registered) {
        if (!do_register()) {
          if (!state.sleep_for(backoff)) break;
          backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
          flush_collected();  // keep windows moving into the outbox (and spool) meanwhile
          continue;
        }
        backoff = std::chrono::milliseconds(250);
        sync_pinglist();
      }
      auto next_sync = Clock::now() + jitter(sync_interval);
      auto next_report = Clock::now() + report_interval;
      while (registered && !state.is_stopping()) {
        const bool again = state.wait_until(std::min(next_sync, next_report));
        if (state.is_stopping()) break;
        if (again) {  // an RDMA engine came or went: register its new address
          registered = false;
          break;
        }
        auto now = Clock::now();
        bool changed = false;
        if (now >= next_report) {
          flush_collected();
          changed = deliver();
          next_report = now + report_interval;
        }
        if (changed || now >= next_sync) {
          sync_pinglist();
          next_sync = Clock::now() + jitter(sync_interval);
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
  if (I.cfg.name.empty()) I.cfg.name = host_name();
  if (I.cfg.address.empty()) {
    auto a = route_source_address(urls->front());
    if (!a) return fail("cannot pick the agent's address (use --address): {}", a.error().message);
    I.cfg.address = *a;
  }
  if (auto st = I.outbox.open(); !st) return st;
  I.client.open(std::move(*urls), I.cfg.token, I.cfg.tls);
  I.health.start();
  if (!I.cfg.rdma.empty() && std::find(I.cfg.protocols.begin(), I.cfg.protocols.end(),
                                       proto::Protocol::rdma) == I.cfg.protocols.end())
    I.cfg.protocols.push_back(proto::Protocol::rdma);
  I.rails.start(I.cfg.rdma);
  I.responder_thread = std::thread([&I] { I.responder_loop(); });
  I.control = std::thread([&I] { I.control_loop(); });
  return {};
}

void Agent::stop() {
  auto& I = *impl_;
  if (!I.state.request_stop()) return;
  {
    std::lock_guard lk(I.responder_mu);
    if (I.responder) I.responder->stop();
  }
  I.probers.stop();
  I.rails.stop();
  if (I.control.joinable()) I.control.join();
  if (I.responder_thread.joinable()) I.responder_thread.join();
  I.probers.join();  // the control thread, which starts probers, has ended
  I.rails.join();
  // Whatever was not delivered goes to the spool, so a restarted agent sends it later.
  I.flush_collected();
  I.outbox.spill_all();
}

AgentStats Agent::stats() const {
  auto& I = *impl_;
  return {I.state.windows_made.load(),    I.delivery.windows_delivered.load(),
          I.delivery.reports_sent.load(), I.delivery.report_failures.load(),
          I.state.restarts.load(),        I.pl_version.load(),
          I.outbox.pending_windows(),     I.outbox.dropped_windows(),
          I.outbox.refused_windows()};
}

}  // namespace weft::agent
