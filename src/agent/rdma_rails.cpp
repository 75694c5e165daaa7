#include "agent/rdma_rails.hpp"

#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "agent/rdma_endpoint.hpp"
#include "agent/rdma_pinglist.hpp"
#include "agent/supervisor.hpp"
#include "base/log.hpp"

namespace weft::agent {

struct RdmaRails::Rail {
  size_t rail = 0;
  probe::RdmaEngineConfig config;
  std::thread thread;
  std::mutex mu;
  std::unique_ptr<probe::RdmaEngine> ready;     // made by start(), not yet run
  std::optional<std::string> start_error;       // or why start() could not make it
  probe::RdmaEngine* current = nullptr;         // while run() is active
  std::optional<proto::RdmaEndpoint> endpoint;  // its address while it runs (registered)
  std::optional<probe::RdmaSchedule> schedule;  // from the pinglist
  std::vector<probe::RdmaTarget> targets;       // from the pinglist
  uint64_t sent_base = 0;                       // probes sent by earlier engines
};

RdmaRails::RdmaRails(RunState& state) : state_(state) {}

RdmaRails::~RdmaRails() {
  stop();
  join();
}

void RdmaRails::start(const std::vector<probe::RdmaEngineConfig>& configs) {
  for (size_t i = 0; i < configs.size(); ++i) {
    auto rail = std::make_unique<Rail>();
    rail->rail = i;
    rail->config = configs[i];
    auto e = probe::RdmaEngine::create(rail->config);
    if (e)
      rail->ready = std::move(*e);
    else
      rail->start_error = e.error().message;  // the rail's supervisor reports it
    if (rail->ready) rail->endpoint = endpoint_of(rail->ready->address());
    rails_.push_back(std::move(rail));
  }
  for (auto& r : rails_) {
    Rail* raw = r.get();
    r->thread = std::thread([this, raw] { loop(*raw); });
  }
}

void RdmaRails::loop(Rail& r) {
  Supervisor supervisor(state_, "rdma_engine", fmt::format("rdma rail {} ({})", r.rail, r.config.device));
  while (!state_.is_stopping()) {
    std::unique_ptr<probe::RdmaEngine> e;
    {
      std::lock_guard lk(r.mu);
      e = std::move(r.ready);
    }
    if (!e && r.start_error) {  // start() tried already
      const std::string error = std::exchange(r.start_error, std::nullopt).value();
      if (!supervisor.failed(error)) break;
      continue;
    }
    if (!e) {
      auto made = probe::RdmaEngine::create(r.config);
      if (!made) {
        if (!supervisor.failed(made.error().message)) break;
        continue;
      }
      e = std::move(*made);
    }
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
    if (changed) state_.addresses_changed();
    // Agent::stop() sets stopping, then stops r.current. Either it saw this engine as current,
    // or stopping was set before this check; the engine keeps a stop() made before run().
    if (state_.is_stopping()) e->stop();
    supervisor.running();
    auto st = e->run([this](proto::WindowStats&& w) { state_.collect(std::move(w)); });
    {
      std::lock_guard lk(r.mu);
      r.current = nullptr;
      r.endpoint.reset();
      r.sent_base += e->counters().sent;
    }
    if (state_.is_stopping()) break;
    e.reset();  // the QP goes; its successor gets a new QPN, which peers learn from the pinglist
    state_.addresses_changed();
    if (!supervisor.stopped(st ? "run() returned" : st.error().message)) break;
  }
}

std::vector<proto::RdmaEndpoint> RdmaRails::endpoints() {
  std::vector<proto::RdmaEndpoint> out;
  for (auto& r : rails_) {
    std::lock_guard lk(r->mu);
    if (!r->endpoint) break;
    out.push_back(*r->endpoint);
  }
  return out;
}

void RdmaRails::apply(const proto::ProtocolPinglist* pp, Duration window) {
  std::vector<std::vector<probe::RdmaTarget>> by_rail(rails_.size());
  std::optional<probe::RdmaSchedule> schedule;
  if (pp) {
    by_rail = rdma_targets_by_rail(pp->targets, rails_.size());
    schedule = probe::RdmaSchedule{pp->interval, pp->timeout, window};
  }
  for (auto& r : rails_) {
    std::lock_guard lk(r->mu);
    r->targets = by_rail[r->rail];
    if (schedule) r->schedule = schedule;
    if (!r->current) continue;
    if (schedule)
      if (auto st = r->current->set_schedule(*schedule); !st)
        log().error("pinglist: rdma: {}", st.error().message);
    r->current->set_targets(r->targets);
  }
  for (auto& r : rails_) log().info("rdma rail {} pinglist: {} targets", r->rail, by_rail[r->rail].size());
}

void RdmaRails::stop() {
  for (auto& r : rails_) {
    std::lock_guard rl(r->mu);
    if (r->current) r->current->stop();
  }
}

void RdmaRails::join() {
  for (auto& r : rails_)
    if (r->thread.joinable()) r->thread.join();
}

uint64_t RdmaRails::probes_sent() {
  uint64_t n = 0;
  for (auto& r : rails_) {
    std::lock_guard rl(r->mu);
    n += r->sent_base + (r->current ? r->current->counters().sent : 0);
  }
  return n;
}

}  // namespace weft::agent
