#include "controller/blame.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace weft::controller {

namespace {

struct Side {
  size_t pairs = 0, bad = 0;
  uint64_t bad_sent = 0, bad_lost = 0;
};

struct HostStats {
  Side in, out;  // pairs to the host, pairs from it
};

bool mostly_bad(const Side& s) { return s.pairs > 0 && s.bad * 2 >= s.pairs && s.bad >= 2; }

double ratio(uint64_t lost, uint64_t sent) {
  return sent == 0 ? 0.0 : static_cast<double>(lost) / static_cast<double>(sent);
}

}  // namespace

Blame find_blame(const std::vector<PairWindow>& pairs, const std::vector<std::string>& down,
                 int64_t now_unix_ns, int64_t window_ns, const BlameOptions& opt) {
  const std::set<std::string> down_set(down.begin(), down.end());
  std::vector<const PairWindow*> fresh;
  for (const auto& p : pairs) {
    if (p.window.sent == 0) continue;
    if (now_unix_ns - p.window.end_unix_ns > opt.stale_windows * window_ns) continue;
    if (down_set.count(p.src) || down_set.count(p.dst)) continue;
    fresh.push_back(&p);
  }
  Blame b;
  b.measured_pairs = fresh.size();
  std::map<std::string, std::set<std::string>> peers;  // everyone a host has a fresh pair with
  for (const PairWindow* p : fresh) {
    peers[p->src].insert(p->dst);
    peers[p->dst].insert(p->src);
    b.bad_pairs += p->loss_ratio() >= opt.loss_threshold;
  }
  // Greedy triangulation: blame the host with the most bad pairs among those not yet explained,
  // take its pairs out, and look again. Two bad hosts in a mesh of four make every healthy host
  // see half its pairs bad; once the first bad host's pairs are out, the healthy ones no longer
  // qualify and the second bad host still does.
  std::map<std::string, std::string> blamed;  // host -> direction
  auto explained = [&](const PairWindow& p) {
    auto s = blamed.find(p.src);
    if (s != blamed.end() && (s->second == "out" || s->second == "both")) return true;
    auto d = blamed.find(p.dst);
    return d != blamed.end() && (d->second == "in" || d->second == "both");
  };
  for (size_t round = 0; round < peers.size(); ++round) {
    std::map<std::string, HostStats> hosts;
    for (const PairWindow* p : fresh) {
      if (explained(*p)) continue;
      const bool bad = p->loss_ratio() >= opt.loss_threshold;
      for (Side* side : {&hosts[p->src].out, &hosts[p->dst].in}) {
        ++side->pairs;
        if (!bad) continue;
        ++side->bad;
        side->bad_sent += p->window.sent;
        side->bad_lost += p->window.lost;
      }
    }
    const std::string* best = nullptr;
    size_t best_bad = 0;
    for (const auto& [name, h] : hosts) {
      if (blamed.count(name) || peers[name].size() < opt.min_peers) continue;
      if (!mostly_bad(h.in) && !mostly_bad(h.out)) continue;
      const size_t bad = (mostly_bad(h.in) ? h.in.bad : 0) + (mostly_bad(h.out) ? h.out.bad : 0);
      if (bad > best_bad) {
        best = &name;
        best_bad = bad;
      }
    }
    if (!best) break;
    const HostStats& h = hosts[*best];
    const bool in = mostly_bad(h.in), out = mostly_bad(h.out);
    HostSuspect s;
    s.host = *best;
    s.direction = in && out ? "both" : in ? "in" : "out";
    s.pairs = (in ? h.in.pairs : 0) + (out ? h.out.pairs : 0);
    s.bad_pairs = (in ? h.in.bad : 0) + (out ? h.out.bad : 0);
    s.loss_ratio = ratio((in ? h.in.bad_lost : 0) + (out ? h.out.bad_lost : 0),
                         (in ? h.in.bad_sent : 0) + (out ? h.out.bad_sent : 0));
    blamed[s.host] = s.direction;
    b.hosts.push_back(std::move(s));
  }
  for (const PairWindow* p : fresh) {
    if (p->loss_ratio() < opt.loss_threshold || explained(*p)) continue;
    b.links.push_back({p->src, p->dst, p->loss_ratio()});
  }
  std::sort(b.hosts.begin(), b.hosts.end(), [](const HostSuspect& x, const HostSuspect& y) {
    return x.bad_pairs != y.bad_pairs ? x.bad_pairs > y.bad_pairs : x.host < y.host;
  });
  std::sort(b.links.begin(), b.links.end(), [](const LinkSuspect& x, const LinkSuspect& y) {
    return x.loss_ratio != y.loss_ratio ? x.loss_ratio > y.loss_ratio
                                        : std::tie(x.src, x.dst) < std::tie(y.src, y.dst);
  });
  return b;
}

}  // namespace weft::controller
