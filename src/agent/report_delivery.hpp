#pragma once
// Delivery of the outbox to the controller: batches oldest first, each with the current health
// and the alarms not yet reported, or a heartbeat when there is nothing to send. Nothing measured
// is lost to a refusal (issue 14): a refused batch stays at the head of the outbox and is sent
// again, except one the controller calls malformed five times running, which is set aside.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "agent/controller_client.hpp"
#include "agent/outbox.hpp"
#include "agent/run_state.hpp"
#include "proto/report.hpp"

namespace weft::agent {

class ReportDelivery {
 public:
  ReportDelivery(RunState& state, Outbox& outbox, ControllerClient& client)
      : state_(state), outbox_(outbox), client_(client) {}

  struct Outcome {
    bool pinglist_changed = false;  // the controller's pinglist version is not the agent's
    bool must_register = false;     // the controller forgot the agent (409), or another replica is in use
  };
  // Sends what the outbox holds; stops at the first failure (retried next tick).
  Outcome deliver(const std::string& agent, uint64_t pinglist_version,
                  const std::function<proto::Health()>& health);

  std::atomic<uint64_t> windows_delivered{0};
  std::atomic<uint64_t> reports_sent{0};
  std::atomic<uint64_t> report_failures{0};

 private:
  // Consecutive "malformed" answers for the batch at the head of the outbox.
  static constexpr int kContentRefusalsBeforeSetAside = 5;

  RunState& state_;
  Outbox& outbox_;
  ControllerClient& client_;
  uint64_t seq_ = 0;  // of heartbeats; a batch carries the outbox's
  int content_refusals_ = 0;
};

}  // namespace weft::agent
