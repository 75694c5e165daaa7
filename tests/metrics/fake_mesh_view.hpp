#pragma once
// A MeshView over plain vectors, for the renderer's tests: the renderer only ever reads the view.
#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "controller/mesh_state.hpp"

namespace weft::controller::testing {

inline PairWindow pair(proto::Protocol proto, std::string src, std::string dst, int64_t end_ns, uint64_t sent,
                       uint64_t lost, int64_t p50_ns, int64_t p99_ns) {
  PairWindow p;
  p.src = std::move(src);
  p.dst = std::move(dst);
  p.window.protocol = proto;
  p.window.target = p.dst;
  p.window.start_unix_ns = end_ns - 10'000'000'000;
  p.window.end_unix_ns = end_ns;
  p.window.sent = sent;
  p.window.lost = lost;
  p.window.received = sent - lost;
  if (p.window.received > 0) {
    auto& r = p.window.network_rtt;
    r.count = p.window.received;
    r.min_ns = p50_ns / 2;
    r.p50_ns = p50_ns;
    r.p90_ns = (p50_ns + p99_ns) / 2;
    r.p99_ns = p99_ns;
    r.max_ns = p99_ns * 2;
  }
  return p;
}

inline AgentInfo agent(std::string name, AgentState state, std::vector<proto::Protocol> protos) {
  AgentInfo a;
  a.name = std::move(name);
  a.state = state;
  a.version = "0.1.0";
  a.protocols = std::move(protos);
  return a;
}

class FakeMeshView final : public MeshView {
 public:
  std::vector<PairWindow> pairs;
  std::vector<AgentInfo> agent_list;
  std::vector<GroupInfo> group_list;
  IngestCounters counters;
  StoreInfo store{"sqlite", "/tmp/x.db", true, ""};
  int64_t window = 10'000'000'000;

  std::vector<PairWindow> latest(proto::Protocol protocol) const override {
    std::vector<PairWindow> out;
    for (const auto& p : pairs)
      if (p.window.protocol == protocol) out.push_back(p);
    std::ranges::sort(
        out, [](const auto& a, const auto& b) { return std::tie(a.src, a.dst) < std::tie(b.src, b.dst); });
    return out;
  }
  std::optional<PairWindow> latest_pair(proto::Protocol protocol, const std::string& src,
                                        const std::string& dst) const override {
    for (const auto& p : pairs)
      if (p.window.protocol == protocol && p.src == src && p.dst == dst) return p;
    return std::nullopt;
  }
  std::vector<AgentInfo> agents() const override { return agent_list; }
  std::vector<GroupInfo> groups() const override { return group_list; }
  IngestCounters ingest_counters() const override { return counters; }
  StoreInfo store_info() const override { return store; }
  int64_t window_ns() const override { return window; }
};

}  // namespace weft::controller::testing
