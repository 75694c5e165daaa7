#include "agent/prober_runs.hpp"

#include <thread>
#include <utility>

#include "agent/supervisor.hpp"
#include "base/log.hpp"

namespace weft::agent {

struct ProberRuns::Run {
  proto::Protocol protocol;
  std::thread thread;
  std::mutex mu;
  probe::ProberConfig config;
  std::vector<probe::Target> targets;
  probe::Prober* current = nullptr;  // while run() is active
  bool reconfigure = false;          // a planned stop to apply a new config
  uint64_t sent_base = 0;            // probes sent by earlier incarnations
};

ProberRuns::ProberRuns(RunState& state) : state_(state) {}

ProberRuns::~ProberRuns() {
  stop();
  join();
}

void ProberRuns::loop(Run& r) {
  Supervisor supervisor(state_, "prober", fmt::format("{} prober", proto::to_string(r.protocol)));
  while (!state_.is_stopping()) {
    probe::ProberConfig pc;
    std::vector<probe::Target> targets;
    {
      std::lock_guard lk(r.mu);
      pc = r.config;
      targets = r.targets;
    }
    auto p = probe::Prober::create(pc);
    if (!p) {
      if (!supervisor.failed(p.error().message)) break;
      continue;
    }
    (*p)->set_targets(std::move(targets));
    {
      std::lock_guard lk(r.mu);
      r.current = p->get();
      // Targets may have changed between the copy and now: give it the latest.
      (*p)->set_targets(r.targets);
    }
    if (state_.is_stopping()) break;
    supervisor.running();
    probe::Prober* prober = p->get();
    prober->set_on_path([this](proto::PathTrace&& path) { state_.add_path(std::move(path)); });
    uint64_t unsent_seen = 0;
    int64_t unsent_alarm_at = 0;
    auto st = (*p)->run([&, this](proto::WindowStats&& w) {
      state_.collect(std::move(w));
      // Probes this host could not send (out of descriptors...) are in no window, so the mesh
      // does not blame the network for them; the agent says so instead (at most once a minute).
      const uint64_t unsent = prober->counters().unsent;
      if (unsent > unsent_seen && unix_ns() - unsent_alarm_at > 60'000'000'000) {
        unsent_alarm_at = unix_ns();
        state_.alarm(
            "probe_unsent",
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
    if (state_.is_stopping()) break;
    if (planned) continue;
    if (!supervisor.stopped(st ? "run() returned" : st.error().message)) break;
  }
}

void ProberRuns::apply(std::map<proto::Protocol, ProberPlan> wanted) {
  std::lock_guard lk(mu_);
  for (auto& [proto, run] : runs_)
    if (!wanted.contains(proto)) {  // no longer asked for: keep the thread, probe nobody
      std::lock_guard rl(run->mu);
      run->targets.clear();
      if (run->current) run->current->set_targets({});
    }
  for (auto& [proto, want] : wanted) {
    auto& [pc, targets] = want;
    auto it = runs_.find(proto);
    if (it == runs_.end()) {
      auto run = std::make_unique<Run>();
      run->protocol = proto;
      run->config = pc;
      run->targets = targets;
      Run* raw = run.get();
      run->thread = std::thread([this, raw] { loop(*raw); });
      runs_.emplace(proto, std::move(run));
      log().info("{} prober started with {} targets", proto::to_string(proto), targets.size());
      continue;
    }
    Run& run = *it->second;
    std::lock_guard rl(run.mu);
    bool same = run.config.interval == pc.interval && run.config.timeout == pc.timeout &&
                run.config.window == pc.window && run.config.bind_address == pc.bind_address &&
                run.config.flows == pc.flows && run.config.trace_interval == pc.trace_interval;
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

void ProberRuns::stop() {
  std::lock_guard lk(mu_);
  for (auto& [p, r] : runs_) {
    std::lock_guard rl(r->mu);
    if (r->current) r->current->stop();
  }
}

void ProberRuns::join() {
  for (auto& [p, r] : runs_)
    if (r->thread.joinable()) r->thread.join();
}

uint64_t ProberRuns::probes_sent() {
  uint64_t n = 0;
  std::lock_guard lk(mu_);
  for (auto& [p, r] : runs_) {
    std::lock_guard rl(r->mu);
    n += r->sent_base + (r->current ? r->current->counters().sent : 0);
  }
  return n;
}

}  // namespace weft::agent
