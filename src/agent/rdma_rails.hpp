#pragma once
// The agent's RDMA rails: one probe engine per configured device/port/GID (rail 0, 1, ... in the
// configured order), each run by its own thread and re-created when it dies. A re-created engine
// has a new QP and so a new address: the rail asks the control loop to register again
// (RunState::addresses_changed). A device that is absent is retried less and less often.
#include <cstdint>
#include <memory>
#include <vector>

#include "agent/run_state.hpp"
#include "probe/rdma/engine.hpp"
#include "proto/pinglist.hpp"
#include "proto/rdma_endpoint.hpp"

namespace weft::agent {

class RdmaRails {
 public:
  explicit RdmaRails(RunState& state);
  ~RdmaRails();
  RdmaRails(const RdmaRails&) = delete;
  RdmaRails& operator=(const RdmaRails&) = delete;

  // Makes one engine per config here, so that the first registration already carries their
  // addresses (one that fails raises an alarm and is retried by its thread), then starts the threads.
  void start(const std::vector<probe::RdmaEngineConfig>& configs);
  bool empty() const { return rails_.empty(); }

  // The running engines' addresses, rail 0 first. Rails are positions, so the list ends at the
  // first rail whose engine is not running (the ones after it are registered once it is back).
  std::vector<proto::RdmaEndpoint> endpoints();
  // The rdma part of a pinglist (nullptr: the pinglist has none; the rails then probe nobody).
  void apply(const proto::ProtocolPinglist* pp, Duration window);
  // Stops the running engines (after RunState::request_stop(), so their threads exit).
  void stop();
  void join();
  uint64_t probes_sent();

 private:
  struct Rail;
  void loop(Rail& r);

  RunState& state_;
  std::vector<std::unique_ptr<Rail>> rails_;  // fixed after start(), by rail
};

}  // namespace weft::agent
