#pragma once
// The agent process: registers with the controller, keeps its pinglist in sync (with jitter, so a
// thousand agents do not ask at the same instant), runs the responder, one prober per protocol and
// one RDMA engine per configured device (all under one restart policy, agent/supervisor.hpp; a
// restarted engine has a new address, so the agent registers again), and delivers finished
// windows in order through the outbox, which buffers and spools while the controller is unreachable.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent/controller_client.hpp"
#include "agent/outbox.hpp"
#include "base/result.hpp"
#include "probe/rdma/engine.hpp"
#include "proto/report.hpp"
#include "proto/window_stats.hpp"

namespace weft::agent {

struct AgentConfig {
  std::string controller_url;  // http(s)://HOST:PORT, or several comma-separated (replicas)
  std::string token;
  ControllerTls tls;  // https://: the CA to verify the controller against, a client certificate
  std::string name;   // default: the host name
  std::string
      address;  // the address to probe from and answer on; default: the one that routes to the controller
  uint16_t udp_port = 7777;
  uint16_t tcp_port = 7778;
  // The TCP responder closes a connection silent this long (probers keep theirs busy).
  std::chrono::seconds tcp_idle_timeout{60};
  std::vector<proto::Protocol> protocols{proto::Protocol::udp, proto::Protocol::tcp};
  // One RDMA probe engine per entry (device/port/GID), rail 0, 1, ... in this order; each probes
  // the same rail of its peers and answers them. Non-empty adds protocol rdma. Interval, timeout
  // and window come from the pinglist (the values here are used until it arrives).
  std::vector<probe::RdmaEngineConfig> rdma{};
  OutboxLimits outbox;
};

struct AgentStats {
  uint64_t windows_made = 0;
  uint64_t windows_delivered = 0;
  uint64_t reports_sent = 0;
  uint64_t report_failures = 0;
  uint64_t prober_restarts = 0;
  uint64_t pinglist_version = 0;
  uint64_t pending_windows = 0;
  uint64_t dropped_windows = 0;
  uint64_t refused_windows = 0;  // set aside after the controller refused them as malformed
};

class Agent {
 public:
  explicit Agent(AgentConfig cfg);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  Status start();
  void stop();
  AgentStats stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::agent
