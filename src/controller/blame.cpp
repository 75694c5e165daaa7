#include "controller/blame.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <unordered_map>

#include "controller/glob.hpp"

namespace weft::controller {

namespace {

struct Side {
  size_t pairs = 0, bad = 0, lossy = 0, slow = 0;
  uint64_t bad_sent = 0, bad_lost = 0;
};

// One fresh pair with its verdict.
struct Judged {
  const PairWindow* p = nullptr;
  bool lossy = false, slow = false;
  int64_t expected_ns = 0;
  bool bad() const { return lossy || slow; }
};

std::string reason_of(bool lossy, bool slow) {
  return lossy && slow ? "loss+latency" : slow ? "latency" : "loss";
}

int64_t median(std::vector<int64_t>& v) {
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

struct HostStats {
  Side in, out;  // pairs to the host, pairs from it
};

bool mostly_bad(const Side& s) { return s.pairs > 0 && s.bad * 2 >= s.pairs && s.bad >= 2; }

double ratio(uint64_t lost, uint64_t sent) {
  return sent == 0 ? 0.0 : static_cast<double>(lost) / static_cast<double>(sent);
}

}  // namespace

BlameContext blame_context(proto::Protocol protocol, const std::vector<AgentInfo>& agents,
                           const std::vector<GroupInfo>& groups) {
  BlameContext ctx;
  for (const auto& a : agents)
    if (a.up_again_unix_ns) ctx.up_again_unix_ns[a.name] = a.up_again_unix_ns;
  auto mine = std::make_shared<std::vector<GroupInfo>>();
  for (const auto& g : groups)
    if (std::find(g.protocols.begin(), g.protocols.end(), protocol) != g.protocols.end()) mine->push_back(g);
  auto member = [](const GroupInfo& g, const std::string& host) {
    return std::any_of(g.members.begin(), g.members.end(),
                       [&](const std::string& pat) { return glob_match(pat, host); });
  };
  // The groups each registered agent is in, matched once here: asking per pair would glob-match
  // every group's patterns a million times in a 10,000-agent fleet (most of /metrics' time was that).
  auto groups_of = std::make_shared<std::unordered_map<std::string, std::vector<uint32_t>>>();
  for (const auto& a : agents) {
    auto& in = (*groups_of)[a.name];
    for (uint32_t i = 0; i < mine->size(); ++i)
      if (member((*mine)[i], a.name)) in.push_back(i);
  }
  ctx.group_of = [mine, groups_of, member](const PairWindow& p) -> std::string {
    auto s = groups_of->find(p.src), d = groups_of->find(p.dst);
    if (s == groups_of->end() || d == groups_of->end()) {  // not registered (any more): match by hand
      for (const auto& g : *mine)
        if (member(g, p.src) && member(g, p.dst)) return g.name;
      return {};
    }
    // The first group (in config order) holding both: both lists are in that order.
    auto i = s->second.begin(), j = d->second.begin();
    while (i != s->second.end() && j != d->second.end()) {
      if (*i == *j) return (*mine)[*i].name;
      if (*i < *j)
        ++i;
      else
        ++j;
    }
    return {};
  };
  return ctx;
}

Blame find_blame(const std::vector<PairWindow>& pairs, const std::vector<std::string>& down,
                 int64_t now_unix_ns, int64_t window_ns, const BlameOptions& opt, const BlameContext& ctx) {
  const std::set<std::string> down_set(down.begin(), down.end());
  auto measured_outage = [&](const PairWindow& p) {
    for (const std::string* end : {&p.src, &p.dst}) {
      auto it = ctx.up_again_unix_ns.find(*end);
      if (it != ctx.up_again_unix_ns.end() && p.window.start_unix_ns < it->second) return true;
    }
    return false;
  };
  std::vector<Judged> fresh;
  for (const auto& p : pairs) {
    if (p.window.sent == 0) continue;
    if (now_unix_ns - p.window.end_unix_ns > opt.stale_windows * window_ns) continue;
    if (down_set.count(p.src) || down_set.count(p.dst)) continue;
    if (measured_outage(p)) continue;
    fresh.push_back({&p, p.loss_ratio() >= opt.loss_threshold, false, 0});
  }
  // Latency: against the pair's own usual RTT, and against its group's median.
  std::map<std::string, std::vector<int64_t>> group_rtts;
  std::vector<std::string> group(fresh.size());
  for (size_t i = 0; i < fresh.size(); ++i) {
    group[i] = ctx.group_of ? ctx.group_of(*fresh[i].p) : std::string();
    if (int64_t m = fresh[i].p->median_rtt_ns(); m > 0) group_rtts[group[i]].push_back(m);
  }
  std::map<std::string, int64_t> group_median;
  for (auto& [g, v] : group_rtts)
    if (v.size() >= 4) group_median[g] = median(v);
  auto slower = [&](int64_t rtt, int64_t expected) {
    return expected > 0 && static_cast<double>(rtt) >= opt.latency_factor * static_cast<double>(expected) &&
           rtt - expected >= opt.latency_margin_ns;
  };
  for (size_t i = 0; i < fresh.size(); ++i) {
    Judged& j = fresh[i];
    const int64_t rtt = j.p->median_rtt_ns();
    if (rtt <= 0) continue;
    if (slower(rtt, j.p->baseline_rtt_ns)) {
      j.slow = true;
      j.expected_ns = j.p->baseline_rtt_ns;
    } else if (auto g = group_median.find(group[i]); g != group_median.end() && slower(rtt, g->second)) {
      j.slow = true;
      j.expected_ns = g->second;
    }
  }
  Blame b;
  b.measured_pairs = fresh.size();
  std::map<std::string, std::set<std::string>> peers;  // everyone a host has a fresh pair with
  for (const Judged& j : fresh) {
    peers[j.p->src].insert(j.p->dst);
    peers[j.p->dst].insert(j.p->src);
    b.bad_pairs += j.bad();
    b.slow_pairs += j.slow;
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
    for (const Judged& j : fresh) {
      if (explained(*j.p)) continue;
      for (Side* side : {&hosts[j.p->src].out, &hosts[j.p->dst].in}) {
        ++side->pairs;
        if (!j.bad()) continue;
        ++side->bad;
        side->lossy += j.lossy;
        side->slow += j.slow;
        side->bad_sent += j.p->window.sent;
        side->bad_lost += j.p->window.lost;
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
    s.reason = reason_of((in ? h.in.lossy : 0) + (out ? h.out.lossy : 0) > 0,
                         (in ? h.in.slow : 0) + (out ? h.out.slow : 0) > 0);
    s.loss_ratio = ratio((in ? h.in.bad_lost : 0) + (out ? h.out.bad_lost : 0),
                         (in ? h.in.bad_sent : 0) + (out ? h.out.bad_sent : 0));
    blamed[s.host] = s.direction;
    b.hosts.push_back(std::move(s));
  }
  for (const Judged& j : fresh) {
    if (!j.bad() || explained(*j.p)) continue;
    b.links.push_back({j.p->src, j.p->dst, reason_of(j.lossy, j.slow), j.p->loss_ratio(),
                       j.p->median_rtt_ns(), j.slow ? j.expected_ns : 0});
  }
  std::sort(b.hosts.begin(), b.hosts.end(), [](const HostSuspect& x, const HostSuspect& y) {
    return x.bad_pairs != y.bad_pairs ? x.bad_pairs > y.bad_pairs : x.host < y.host;
  });
  // Worst first: by loss, then (for links that only got slow) by how much slower.
  std::sort(b.links.begin(), b.links.end(), [](const LinkSuspect& x, const LinkSuspect& y) {
    if (x.loss_ratio != y.loss_ratio) return x.loss_ratio > y.loss_ratio;
    const int64_t xs = x.rtt_ns - x.expected_ns, ys = y.rtt_ns - y.expected_ns;
    if (xs != ys) return xs > ys;
    return std::tie(x.src, x.dst) < std::tie(y.src, y.dst);
  });
  return b;
}

}  // namespace weft::controller
