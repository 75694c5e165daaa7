#include "agent/health_sampler.hpp"

#include <algorithm>

#include "base/proc_stats.hpp"

namespace weft::agent {

void HealthSampler::start() {
  last_cpu_s_ = static_cast<double>(self_cpu_ns()) / 1e9;
  last_at_ = Clock::now();
}

proto::Health HealthSampler::sample(uint64_t probes_sent, const Outbox& outbox, uint64_t restarts) {
  proto::Health h;
  auto now = Clock::now();
  double dt = std::chrono::duration<double>(now - last_at_).count();
  double cpu = static_cast<double>(self_cpu_ns()) / 1e9;
  // A rate over less than 50 ms is noise (several reports in one tick): it stays 0 and the interval
  // runs on to the next sample.
  if (dt > 0.05) {
    h.cpu_percent = std::max(0.0, (cpu - last_cpu_s_) / dt * 100.0);
    h.probes_per_s = probes_sent >= last_probes_ ? static_cast<double>(probes_sent - last_probes_) / dt : 0;
    last_cpu_s_ = cpu;
    last_probes_ = probes_sent;
    last_at_ = now;
  }
  h.rss_kb = static_cast<uint64_t>(std::max<int64_t>(0, read_proc_stats().rss_kb));
  // Windows the controller will not see: dropped by the bounded outbox, or set aside as refused.
  h.dropped_windows = outbox.dropped_windows() + outbox.refused_windows();
  h.spooled_windows = outbox.pending_windows();
  h.prober_restarts = restarts;
  return h;
}

}  // namespace weft::agent
