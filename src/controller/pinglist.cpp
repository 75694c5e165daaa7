#include "controller/pinglist.hpp"

#include <algorithm>
#include <set>

namespace weft::controller {
namespace {

bool matches_any(const std::vector<std::string>& patterns, const std::string& name) {
  for (const auto& p : patterns)
    if (glob_match(p, name)) return true;
  return false;
}

bool has(const std::vector<proto::Protocol>& v, proto::Protocol p) {
  return std::find(v.begin(), v.end(), p) != v.end();
}

uint16_t port_of(const Peer& peer, proto::Protocol p) {
  switch (p) {
    case proto::Protocol::udp:
      return peer.udp_port;
    case proto::Protocol::tcp:
      return peer.tcp_port;
    case proto::Protocol::rdma:
      return 0;
  }
  return 0;
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  h &= (1ull << 53) - 1;  // exact in JSON readers that use doubles (JavaScript)
  return h == 0 ? 1 : h;  // 0 means "no pinglist yet" to agents
}

}  // namespace

proto::Pinglist compute_pinglist(const Config& cfg, const std::string& agent,
                                 const std::vector<Peer>& peers) {
  proto::Pinglist out;
  out.window = Duration(cfg.window_ns);
  out.report_interval = Duration(cfg.report_interval_ns);
  out.sync_interval = Duration(cfg.pinglist_sync_ns);
  const Peer* self = nullptr;
  for (const auto& p : peers)
    if (p.name == agent) self = &p;
  if (self) {
    for (const auto& plan : cfg.protocols) {
      if (!has(self->protocols, plan.protocol)) continue;
      std::set<std::string> wanted;  // target names
      for (const auto& g : cfg.groups) {
        if (!has(g.protocols, plan.protocol) || !matches_any(g.members, agent)) continue;
        for (const auto& peer : peers)
          if (matches_any(g.members, peer.name)) wanted.insert(peer.name);
      }
      for (const auto& a : cfg.arrows) {
        if (!has(a.protocols, plan.protocol) || !matches_any(a.from, agent)) continue;
        for (const auto& peer : peers)
          if (matches_any(a.to, peer.name)) wanted.insert(peer.name);
      }
      proto::ProtocolPinglist pl{
          plan.protocol, Duration(plan.interval_ns), Duration(plan.timeout_ns), {}, plan.flows_or_default()};
      for (const auto& peer : peers) {  // peers are sorted by name, so targets are too
        if (peer.name == agent || !peer.up || !wanted.contains(peer.name) ||
            !has(peer.protocols, plan.protocol))
          continue;
        if (plan.protocol == proto::Protocol::rdma) {
          const size_t rails = std::min(self->rdma.size(), peer.rdma.size());
          for (size_t i = 0; i < rails; ++i) {
            std::string name = i == 0 ? peer.name : peer.name + ":" + peer.rdma[i].device;
            pl.targets.push_back({std::move(name), peer.address, 0, static_cast<uint32_t>(i), peer.rdma[i]});
          }
          continue;
        }
        uint16_t port = port_of(peer, plan.protocol);
        if (port == 0 || peer.address.empty()) continue;  // it does not answer this protocol
        pl.targets.push_back({peer.name, peer.address, port});
      }
      // Rail names ("h1:mlx5_1") do not sort like host names ("h10"): keep the promised order.
      std::sort(pl.targets.begin(), pl.targets.end(),
                [](const auto& a, const auto& b) { return a.name < b.name; });
      out.protocols.push_back(std::move(pl));
    }
  }
  out.version = fnv1a(proto::pinglist_content_json(out));
  return out;
}

}  // namespace weft::controller
