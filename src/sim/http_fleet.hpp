#pragma once
// A fleet of simulated agents for `weft bench fleet`: every agent keeps one HTTP connection to the
// controller open, as real agents do, registers, fetches its pinglist, then reports every second
// (health only, and once per 10 s window its windows for `targets` peers) and re-checks its
// pinglist every 10 s. The agents are one epoll loop in the calling thread, each connection bound
// to its own source address in 127.1.0.0/16 (`agents_per_address` per address), as a fleet's agents
// come from their own hosts: the controller's per-address limit applies as it would. Agent a is in
// rack a / 100 (group rack-NNN); its reports carry windows for the next `targets` agents by number.
// With a TLS client context every connection does one handshake when it opens, then stays open.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.hpp"

struct ssl_ctx_st;

namespace weft::sim {

struct FleetOptions {
  size_t agents = 10000;
  size_t targets = 100;
  size_t agents_per_address = 200;
  uint16_t port = 18099;  // the controller's, on 127.0.0.1
};

inline constexpr int64_t kSecond = 1'000'000'000;
inline constexpr int64_t kReportNs = kSecond;  // every agent reports every second
inline constexpr int64_t kWindowNs = 10 * kSecond;

// The requests whose latencies the benchmark reports: the agents' and the API client's.
enum RequestKind : uint8_t {
  kRegister,
  kPinglist,
  kReport,
  kReportWindows,
  kApiHealthz,
  kApiMesh,
  kApiRegister,
  kKinds
};
inline constexpr const char* kKindNames[kKinds] = {"register",       "pinglist",    "report_health_only",
                                                   "report_windows", "api_healthz", "api_mesh_rack",
                                                   "api_register"};

struct Latencies {
  std::vector<int64_t> ns[kKinds];
  size_t errors[kKinds] = {};
  std::string first_error;
  void add(RequestKind k, int64_t v) { ns[k].push_back(v); }
};

// "agent-00042" and its source address.
std::string fleet_agent_name(size_t a);
std::string fleet_agent_ip(size_t a, size_t per_address);

class HttpFleet {
 public:
  // tls: a client context (sim/bench_tls.hpp) for HTTPS, nullptr for plain HTTP.
  HttpFleet(const FleetOptions& o, ssl_ctx_st* tls = nullptr);
  ~HttpFleet();
  Status connect_all();
  // Registers every agent (and fetches its pinglist); returns the seconds it took.
  double register_all(int64_t timeout_ns);
  // Reports for `seconds`: agent a's n-th report is due at start + n s + a/N s.
  void run(double seconds);

  Latencies& lat();
  size_t registered() const;
  size_t late() const;  // reports due while the agent's previous request was still out
  size_t windows_sent() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The API client: /healthz, one rack's mesh, a registration, round robin, on kept-open connections
// from 127.0.0.1, one every 50 ms until `stop`.
void api_client(const FleetOptions& o, ssl_ctx_st* tls, std::atomic<bool>& stop, Latencies& lat);

}  // namespace weft::sim
