#include "controller/replica_sync.hpp"

#include "base/log.hpp"
#include "controller/agent_state.hpp"

namespace weft::controller {

void apply_peer_event(Mesh& mesh, const PeerEvent& ev) {
  switch (ev.kind) {
    case PeerEvent::Kind::report:
      // A report of an agent this replica does not know yet (its registration is older than this
      // replica's start and reached it through the store) is applied all the same: the windows are real.
      mesh.peer_report(ev.agent, ev.windows, ev.received_ns);
      break;
    case PeerEvent::Kind::registration:
      if (auto r = proto::parse_registration(ev.registration); r && r->name == ev.agent)
        mesh.register_agent(*r, ev.received_ns);
      else
        log().warn("replica feed: ignoring a registration of '{}' that does not parse", ev.agent);
      break;
    case PeerEvent::Kind::removal:
      mesh.remove_agent(ev.agent);
      break;
    case PeerEvent::Kind::agent_state:
      // As if the report had come here: last seen at the ingesting replica's time, its health and alarms.
      if (auto s = parse_agent_state(ev.agent_state))
        (void)mesh.touch(ev.agent, s->health, s->alarms, ev.received_ns, /*via_feed=*/true);
      else
        log().warn("replica feed: ignoring {}'s agent state: {}", ev.agent, s.error().message);
      break;
    case PeerEvent::Kind::pinglist:
      mesh.peer_pinglist(ev.agent, ev.pinglist_version, ev.pinglist_targets);
      break;
  }
}

Result<size_t> ReplicaSync::poll_once() {
  auto r = store_.poll_peers([this](const PeerEvent& ev) { apply_peer_event(mesh_, ev); });
  if (!r) {
    trusted_since_ns_.store(INT64_MAX, std::memory_order_relaxed);
  } else if (trusted_since_ns_.load(std::memory_order_relaxed) == INT64_MAX) {
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    trusted_since_ns_.store(now, std::memory_order_relaxed);
  }
  return r;
}

void ReplicaSync::start() {
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
}

void ReplicaSync::stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ReplicaSync::run() {
  uint64_t failures = 0;
  std::unique_lock lk(mu_);
  while (!stopping_) {
    lk.unlock();
    // Events mean more may be waiting (a poll reads a bounded batch per stream): poll again at once,
    // until one finds nothing.
    for (int round = 0; round < 1000 && !stopping_.load(); ++round) {
      auto r = poll_once();
      if (!r) {
        if (failures++ % 50 == 0)
          log().warn("replica feed: {} ({} failed polls)", r.error().message, failures);
        break;
      }
      if (*r == 0) break;
    }
    lk.lock();
    cv_.wait_for(lk, kPollInterval, [&] { return stopping_.load(); });
  }
}

}  // namespace weft::controller
