#include "controller/sim/clos_sim.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_map>

namespace weft::controller::sim {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64: a stand-in for a switch's ECMP hash
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t flow_hash(uint32_t a, uint32_t b, uint16_t sport, uint16_t dport) {
  return mix((static_cast<uint64_t>(a) << 40) ^ (static_cast<uint64_t>(b) << 16) ^
             mix(sport * 65536u + dport));
}

constexpr int64_t kLinkNs = 3'000, kSwitchNs = 2'000, kResponderNs = 20'000;
constexpr uint16_t kDstPort = 7777, kFirstSport = 40000;

struct Crossing {
  uint32_t element;
  int direction;
  bool is_switch;
};

}  // namespace

std::string clos_yaml(const ClosSpec& s) {
  std::string y = "spines: [";
  for (size_t j = 1; j <= s.spines; ++j) y += fmt::format("{}spine{}", j > 1 ? ", " : "", j);
  y += "]\nracks:\n";
  for (size_t r = 1; r <= s.racks; ++r) {
    y += fmt::format("  - name: rack{}\n    tor: tor{}\n    hosts: [", r, r);
    for (size_t h = 1; h <= s.hosts_per_rack; ++h) y += fmt::format("{}r{}h{}", h > 1 ? ", " : "", r, h);
    y += "]\n";
  }
  y += "routers:\n";
  for (size_t r = 1; r <= s.racks; ++r) y += fmt::format("  tor{}: [10.60.{}.{}]\n", r, r / 256, r % 256);
  for (size_t j = 1; j <= s.spines; ++j) y += fmt::format("  spine{}: [10.61.0.{}]\n", j, j);
  return y;
}

std::string router_address(const Topology& t, uint32_t router) {
  const std::string& n = t.element(router).name;
  if (n.starts_with("tor")) {
    const unsigned r = static_cast<unsigned>(std::stoul(n.substr(3)));
    return fmt::format("10.60.{}.{}", r / 256, r % 256);
  }
  return fmt::format("10.61.0.{}", std::stoul(n.substr(5)));
}

Probes simulate(const Topology& t, const ClosSpec& spec, const std::vector<Fault>& faults, int64_t end,
                std::mt19937_64& rng) {
  std::unordered_map<uint64_t, const Fault*> by_key;
  for (const Fault& f : faults)
    by_key[static_cast<uint64_t>(f.element) << 1 | static_cast<uint64_t>(f.direction & 1)] = &f;
  auto fault_at = [&](uint32_t e, int dir) -> const Fault* {
    if (by_key.empty()) return nullptr;
    auto it = by_key.find(static_cast<uint64_t>(e) << 1 | static_cast<uint64_t>(dir & 1));
    return it == by_key.end() ? nullptr : it->second;
  };
  // Hosts by rack, in order.
  std::vector<std::vector<uint32_t>> racks(spec.racks);
  for (size_t r = 0; r < spec.racks; ++r)
    for (size_t h = 0; h < spec.hosts_per_rack; ++h)
      racks[r].push_back(*t.host(fmt::format("r{}h{}", r + 1, h + 1)));
  std::vector<std::string> tor_addr(t.elements().size()), spine_addr(t.elements().size());
  for (size_t r = 0; r < spec.racks; ++r)
    tor_addr[t.tor_of(racks[r][0])] = router_address(t, t.tor_of(racks[r][0]));
  for (uint32_t s : t.spines()) spine_addr[s] = router_address(t, s);

  std::normal_distribution<double> noise(0.0, static_cast<double>(spec.noise_ns));
  std::normal_distribution<double> burst(-spec.burst_sigma * spec.burst_sigma / 2,
                                         std::max(spec.burst_sigma, 1e-9));
  Probes out;
  std::vector<Crossing> cross;
  auto dir_of = [&](uint32_t link, uint32_t from) { return t.element(link).ends[0] == from ? 0 : 1; };
  auto leg = [&](uint32_t from_host, uint32_t to_host, uint32_t spine) {
    const uint32_t ta = t.tor_of(from_host), tb = t.tor_of(to_host);
    const uint32_t la = t.access_link(from_host), lb = t.access_link(to_host);
    cross.push_back({la, dir_of(la, from_host), false});
    cross.push_back({ta, 0, true});
    if (ta != tb) {
      const uint32_t u1 = t.uplink(ta, spine), u2 = t.uplink(tb, spine);
      cross.push_back({u1, dir_of(u1, ta), false});
      cross.push_back({spine, 0, true});
      cross.push_back({u2, dir_of(u2, spine), false});
      cross.push_back({tb, 0, true});
    }
    cross.push_back({lb, dir_of(lb, tb), false});
  };
  const size_t k = std::max<size_t>(1, spec.flows_per_pair);
  for (size_t r = 0; r < spec.racks; ++r)
    for (size_t i = 0; i < spec.hosts_per_rack; ++i) {
      const uint32_t src = racks[r][i];
      const double shock = spec.burst_sigma > 0 ? std::exp(burst(rng)) : 1.0;  // this prober's bursts
      std::vector<uint32_t> peers;
      const size_t intra =
          spec.intra_peers ? std::min(spec.intra_peers, spec.hosts_per_rack - 1) : spec.hosts_per_rack - 1;
      for (size_t j = 1; j <= intra; ++j) peers.push_back(racks[r][(i + j) % spec.hosts_per_rack]);
      const size_t inter = spec.inter_peers ? std::min(spec.inter_peers, spec.racks - 1) : spec.racks - 1;
      for (size_t j = 1; j <= inter; ++j) peers.push_back(racks[(r + j) % spec.racks][i]);
      for (uint32_t dst : peers) {
        const uint32_t ta = t.tor_of(src), tb = t.tor_of(dst);
        const std::vector<uint32_t> ps = ta == tb ? std::vector<uint32_t>{} : t.spines_between(ta, tb);
        PairWindow pw;
        pw.src = t.element(src).name;
        pw.dst = t.element(dst).name;
        pw.window.protocol = proto::Protocol::udp;
        pw.window.target = pw.dst;
        pw.window.start_unix_ns = end - spec.window_ns;
        pw.window.end_unix_ns = end;
        double rtt_sum = 0, base_sum = 0, resp_sum = 0;
        uint64_t rtt_n = 0;
        for (size_t f = 0; f < k; ++f) {
          FlowObservation o;
          o.src = pw.src;
          o.dst = pw.dst;
          o.src_port = static_cast<uint16_t>(kFirstSport + f);
          o.dst_port = kDstPort;
          o.start_unix_ns = pw.window.start_unix_ns;
          o.end_unix_ns = end;
          o.sent = spec.probes_per_pair / k + (f < spec.probes_per_pair % k ? 1 : 0);
          const uint32_t sf =
              ps.empty() ? kNoElement : ps[flow_hash(src, dst, o.src_port, kDstPort) % ps.size()];
          const uint32_t sr =
              ps.empty() ? kNoElement : ps[flow_hash(dst, src, kDstPort, o.src_port) % ps.size()];
          cross.clear();
          leg(src, dst, sf);
          leg(dst, src, sr);
          double survive = 1.0;
          int64_t base = 0, extra = 0, resp = kResponderNs;
          for (const Crossing& c : cross) {
            survive *= 1.0 - spec.background_loss;
            base += c.is_switch ? kSwitchNs : kLinkNs;
            if (const Fault* fl = fault_at(c.element, c.direction)) {
              survive *= 1.0 - std::min(1.0, fl->loss * shock);
              extra += fl->latency_ns;
            }
          }
          if (const Fault* fl = fault_at(src, 0)) {  // the prober's own stack
            survive *= 1.0 - fl->loss;
            extra += fl->latency_ns;
          }
          if (const Fault* fl = fault_at(dst, 1)) {  // the responder's
            survive *= 1.0 - fl->loss;
            resp += fl->latency_ns;
          }
          std::binomial_distribution<uint64_t> lost(o.sent, 1.0 - survive);
          o.lost = lost(rng);
          o.baseline_rtt_ns = base + static_cast<int64_t>(noise(rng) / 3);
          if (o.lost < o.sent) {
            o.rtt_p50_ns = std::max<int64_t>(1, base + extra + static_cast<int64_t>(noise(rng)));
            o.responder_delay_p50_ns = resp + static_cast<int64_t>(noise(rng) / 2);
            rtt_sum += static_cast<double>(o.rtt_p50_ns) * static_cast<double>(o.sent - o.lost);
            resp_sum += static_cast<double>(o.responder_delay_p50_ns) * static_cast<double>(o.sent - o.lost);
            rtt_n += o.sent - o.lost;
          }
          base_sum += static_cast<double>(o.baseline_rtt_ns);
          if (spec.traced) {
            o.hops.push_back(tor_addr[ta]);
            if (sf != kNoElement) {
              o.hops.push_back(spine_addr[sf]);
              o.hops.push_back(tor_addr[tb]);
            }
          }
          pw.window.sent += o.sent;
          pw.window.lost += o.lost;
          out.flows.push_back(std::move(o));
        }
        if (!spec.traced) {  // pairs only: one observation of the pair, flow unknown
          FlowObservation all = out.flows.back();
          all.src_port = 0;
          all.sent = pw.window.sent;
          all.lost = pw.window.lost;
          all.rtt_p50_ns = rtt_n ? static_cast<int64_t>(rtt_sum / static_cast<double>(rtt_n)) : 0;
          all.responder_delay_p50_ns =
              rtt_n ? static_cast<int64_t>(resp_sum / static_cast<double>(rtt_n)) : 0;
          all.baseline_rtt_ns = static_cast<int64_t>(base_sum / static_cast<double>(k));
          all.hops.clear();
          out.flows.resize(out.flows.size() - k);
          out.flows.push_back(std::move(all));
        }
        pw.window.received = pw.window.sent - pw.window.lost;
        if (rtt_n) {
          pw.window.network_rtt.count = rtt_n;
          pw.window.network_rtt.p50_ns = static_cast<int64_t>(rtt_sum / static_cast<double>(rtt_n));
          pw.window.responder_delay.count = rtt_n;
          pw.window.responder_delay.p50_ns = static_cast<int64_t>(resp_sum / static_cast<double>(rtt_n));
        }
        pw.received_unix_ns = end;
        pw.baseline_rtt_ns = static_cast<int64_t>(base_sum / static_cast<double>(k));
        out.pairs.push_back(std::move(pw));
      }
    }
  return out;
}

std::vector<Fault> random_faults(const Topology& t, size_t count, std::mt19937_64& rng) {
  std::vector<uint32_t> by_type[5];  // host, host link, ToR-spine link, ToR, spine
  for (uint32_t e = 0; e < t.elements().size(); ++e) {
    const Element& el = t.element(e);
    switch (el.type) {
      case ElementType::host:
        by_type[0].push_back(e);
        break;
      case ElementType::link:
        by_type[t.element(el.ends[0]).type == ElementType::host ? 1 : 2].push_back(e);
        break;
      case ElementType::tor:
        by_type[3].push_back(e);
        break;
      case ElementType::spine:
        by_type[4].push_back(e);
        break;
    }
  }
  std::vector<Fault> out;
  std::set<uint32_t> used;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (size_t tries = 0; out.size() < count && tries < 1000; ++tries) {
    const auto& pool = by_type[rng() % 5];
    if (pool.empty()) continue;
    Fault f;
    f.element = pool[rng() % pool.size()];
    if (!used.insert(f.element).second) continue;
    const ElementType ty = t.element(f.element).type;
    f.direction = ty == ElementType::host || ty == ElementType::link ? static_cast<int>(rng() % 2) : 0;
    if (u(rng) < 0.5) {
      f.loss = 0.005 + u(rng) * (0.10 - 0.005);
    } else {
      f.latency_ns = static_cast<int64_t>(200'000 + u(rng) * (5'000'000 - 200'000));
      if (ty == ElementType::host) f.direction = 1;  // a slow host answers slowly
    }
    out.push_back(f);
  }
  return out;
}

}  // namespace weft::controller::sim
