#pragma once
// The agent's health line in every report: its CPU use and probe rate since the previous sample,
// its memory, and the windows the controller will not see (dropped or set aside by the outbox).
#include <chrono>
#include <cstdint>

#include "agent/outbox.hpp"
#include "proto/report.hpp"

namespace weft::agent {

class HealthSampler {
 public:
  // Starts the first interval now.
  void start();
  // `probes_sent` and `restarts` are totals since the agent started.
  proto::Health sample(uint64_t probes_sent, const Outbox& outbox, uint64_t restarts);

 private:
  using Clock = std::chrono::steady_clock;
  double last_cpu_s_ = 0;
  Clock::time_point last_at_ = Clock::now();
  uint64_t last_probes_ = 0;
};

}  // namespace weft::agent
