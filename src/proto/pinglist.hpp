#pragma once
// A pinglist: which targets one agent probes, per protocol, and how often (GET /api/v1/pinglist,
// docs/api.md). The controller computes and encodes it (controller/pinglist.hpp); the agent
// decodes it here and probes nothing it did not fully understand.
//
// {"version":..,"window_ns":..,"report_interval_ns":..,"sync_interval_ns":..,
//  "protocols":[{"protocol":"udp","interval_ns":..,"timeout_ns":..,"targets":[{"name","host","port"}]}]}
// Every duration also goes out in its pre-0.2 form (window_ms, interval_us...: wire_duration.hpp).
// rdma targets also carry "rail" and "rdma" (the peer's endpoint, rdma_endpoint.hpp). An agent
// that already has the version gets {"version":..,"unchanged":true}.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/duration.hpp"
#include "base/result.hpp"
#include "proto/protocol.hpp"
#include "proto/rdma_endpoint.hpp"

namespace weft::proto {

struct PinglistTarget {
  std::string name;
  std::string host;  // an IP literal (the peer's registered address)
  uint16_t port = 0;
  // Protocol rdma: the peer's engine on this rail, probed by the agent's own engine of the same
  // index (rail i talks to rail i, as on multi-rail RDMA fabrics).
  uint32_t rail = 0;
  std::optional<RdmaEndpoint> rdma{};
  bool operator==(const PinglistTarget&) const = default;
};

struct ProtocolPinglist {
  Protocol protocol = Protocol::udp;
  Duration interval{};                  // between two probes to one target
  Duration timeout{};                   // a probe unanswered this long is lost
  std::vector<PinglistTarget> targets;  // sorted by name, no duplicates, never the agent itself
  // Flows (source ports) per target: the agent spreads a target's probes over this many so that
  // ECMP spreads them over its paths (docs/probe.md "Flows"). "flows" in the JSON, left out when 1
  // (older agents ignore it and probe over one flow).
  uint32_t flows = 1;
};

struct Pinglist {
  uint64_t version = 0;                     // a hash of the content: 0 means "none yet" to agents
  Duration window{};                        // one window of results per target
  Duration report_interval{};               // how often the agent reports
  Duration sync_interval{};                 // how often it asks for its pinglist again
  std::vector<ProtocolPinglist> protocols;  // at most one per protocol

  size_t target_count() const {
    size_t n = 0;
    for (const auto& p : protocols) n += p.targets.size();
    return n;
  }
};

// Everything but the version: what the controller hashes into the version.
std::string pinglist_content_json(const Pinglist& p);
std::string pinglist_json(const Pinglist& p);
// The answer to an agent that already has `version`.
std::string pinglist_unchanged_json(uint64_t version);

struct PinglistAnswer {
  bool unchanged = false;  // then only pinglist.version is set
  Pinglist pinglist;
  std::vector<std::string> skipped_protocols;  // names this agent does not know (a newer controller's)
};

// Strict on what it reads: every field present with its type and range, each protocol at most once,
// target names host names (names.hpp), hosts IP literals, udp/tcp ports 1..65535, rdma targets with
// a valid endpoint and a rail below kMaxRdmaEndpoints. The first error fails the whole answer, with a
// message naming the field ("pinglist: protocols[0]: targets[3]: port: ..."). Keys it does not know
// are ignored and protocols it does not know are skipped (listed in skipped_protocols): a newer
// controller may add both, and older agents must keep probing what they can.
Result<PinglistAnswer> decode_pinglist(std::string_view body);

}  // namespace weft::proto
