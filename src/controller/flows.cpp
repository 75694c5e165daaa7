#include "controller/flows.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include "controller/rtt_baseline.hpp"
#include "proto/names.hpp"
#include "proto/path_trace.hpp"

namespace weft::controller {
namespace {

std::string pair_key(proto::Protocol p, std::string_view src, std::string_view dst) {
  std::string k;
  k.reserve(src.size() + dst.size() + 2);
  k.push_back(static_cast<char>('0' + static_cast<int>(p)));
  k.append(src);
  k.push_back('\n');
  k.append(dst);
  return k;
}

bool is_ip_literal(const std::string& s) {
  unsigned char buf[16];
  return !s.empty() && s.size() < 64 &&
         (inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1);
}

// The port of "IP:PORT" or "[IP6]:PORT"; 0 if there is none.
uint16_t port_of(std::string_view addr) {
  const size_t colon = addr.rfind(':');
  if (colon == std::string_view::npos) return 0;
  uint32_t v = 0;
  for (char c : addr.substr(colon + 1)) {
    if (c < '0' || c > '9' || v > 65535) return 0;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  return v <= 65535 ? static_cast<uint16_t>(v) : 0;
}

}  // namespace

FlowTable::Shard& FlowTable::shard_of(std::string_view src) const {
  return shards_[std::hash<std::string_view>{}(src) % kShards];
}

std::vector<std::string> FlowTable::sanitise_hops(const std::vector<std::string>& hops, bool& looped) {
  looped = false;
  std::vector<std::string> out;
  out.reserve(std::min(hops.size(), proto::kMaxHops));
  for (size_t i = 0; i < hops.size() && i < proto::kMaxHops; ++i) {
    const std::string& h = hops[i];
    if (!is_ip_literal(h)) {
      out.emplace_back();
      continue;
    }
    if (std::find(out.begin(), out.end(), h) != out.end()) {  // seen before: a loop
      looped = true;
      break;
    }
    out.push_back(h);
  }
  return out;
}

bool FlowTable::same_path(const TracedPath& a, const TracedPath& b) {
  return a.looped == b.looped && proto::same_route(a.hops, a.reached, b.hops, b.reached);
}

FlowState* FlowTable::flow_in(PairFlows& p, uint16_t src_port, bool create) {
  auto it = std::lower_bound(p.flows.begin(), p.flows.end(), src_port,
                             [](const FlowState& f, uint16_t port) { return f.src_port < port; });
  if (it != p.flows.end() && it->src_port == src_port) return &*it;
  if (!create || p.flows.size() >= kMaxFlowsPerPair) return nullptr;
  it = p.flows.insert(it, FlowState{});
  it->src_port = src_port;
  return &*it;
}

namespace {
// Whether the path changed back and forth in the traces [first, end): at least
// FlowTable::kFlapMinChanges times, or in most of them with every path between two changes given
// up within FlowTable::kFlapReturnNs.
bool flaps(const std::vector<TracedPath>& paths, size_t first) {
  const size_t n = paths.size() - first;
  if (n < FlowTable::kFlapMinTraces) return false;
  size_t changes = 0, recent_changes = 0;
  int64_t run_began = -1, longest_run = 0;  // of the paths held between two changes
  for (size_t i = first + 1; i < paths.size(); ++i) {
    const bool changed = !FlowTable::same_path(paths[i - 1], paths[i]);
    changes += changed;
    if (paths.size() - i < FlowTable::kFlapWindow) recent_changes += changed;
    if (!changed) continue;
    if (run_began >= 0) longest_run = std::max(longest_run, paths[i].traced_at_unix_ns - run_began);
    run_began = paths[i].traced_at_unix_ns;
  }
  if (changes >= FlowTable::kFlapMinChanges) return true;
  const size_t recent = std::min(n, FlowTable::kFlapWindow);
  return 2 * recent_changes > recent - 1 && longest_run < FlowTable::kFlapReturnNs;
}
}  // namespace

void FlowTable::add_trace(FlowState& f, TracedPath t) {
  if (!f.paths.empty() && t.traced_at_unix_ns <= f.paths.back().traced_at_unix_ns) return;  // a retry
  if (f.paths.empty()) {
    f.home_hops = t.hops;
    f.path_since_unix_ns = t.traced_at_unix_ns;
  } else if (!same_path(f.paths.back(), t)) {
    ++f.path_changes;
    f.last_change_unix_ns = t.traced_at_unix_ns;
    f.path_since_unix_ns = t.traced_at_unix_ns;
  } else if (t.traced_at_unix_ns - f.path_since_unix_ns >= kHomeHeldNs) {
    f.home_hops = t.hops;
    f.home_held = true;
  }
  if (!proto::same_route(f.home_hops, t.reached, t.hops, t.reached))
    f.last_off_home_unix_ns = t.traced_at_unix_ns;
  f.paths.push_back(std::move(t));
  if (f.paths.size() > kPathHistory) f.paths.erase(f.paths.begin());
  f.flapping = flaps(f.paths, f.paths.size() - std::min(f.paths.size(), kFlapWindow));
}

void FlowTable::ingest(const proto::Report& r, std::span<const uint8_t> keep_windows,
                       std::span<const uint8_t> keep_paths) {
  bool any = !r.paths.empty();
  for (const auto& w : r.windows) any |= !w.flows.empty();
  if (!any) return;
  Shard& sh = shard_of(r.agent);
  std::lock_guard lk(sh.mu);
  auto pair_for = [&](proto::Protocol p, const std::string& dst) -> PairFlows* {
    std::string key = pair_key(p, r.agent, dst);
    if (auto it = sh.pairs.find(key); it != sh.pairs.end()) return &it->second;
    size_t& n = sh.pairs_per_source[r.agent];
    if (n >= kMaxPairsPerSource) return nullptr;
    ++n;
    PairFlows& pf = sh.pairs[std::move(key)];
    pf.src = r.agent;
    pf.dst = dst;
    pf.protocol = p;
    return &pf;
  };
  for (size_t wi = 0; wi < r.windows.size(); ++wi) {
    const auto& w = r.windows[wi];
    if (w.flows.empty() || (!keep_windows.empty() && !keep_windows[wi])) continue;
    PairFlows* pf = pair_for(w.protocol, w.target);
    if (!pf) continue;
    const uint16_t dport = port_of(w.target_address);
    for (const auto& fs : w.flows) {
      FlowState* f = flow_in(*pf, fs.src_port, true);
      if (!f || (f->has_window && w.end_unix_ns <= f->end_unix_ns)) continue;
      if (f->has_window && f->latest.network_rtt_p50_ns > 0)  // the baseline is of windows before this one
        f->baseline_rtt_ns = next_rtt_baseline(f->baseline_rtt_ns, f->latest.network_rtt_p50_ns);
      if (f->has_window)
        f->previous = {f->start_unix_ns, f->end_unix_ns, f->latest.sent, f->latest.lost,
                       f->latest.network_rtt_p50_ns};
      f->has_window = true;
      f->start_unix_ns = w.start_unix_ns;
      f->end_unix_ns = w.end_unix_ns;
      f->latest = fs;
      f->latest.lost = std::min(fs.lost, fs.sent);  // ingest validates the pair, not each flow
      if (dport) f->dst_port = dport;
    }
  }
  for (size_t pi = 0; pi < r.paths.size(); ++pi) {
    const auto& p = r.paths[pi];
    if (!keep_paths.empty() && !keep_paths[pi]) continue;
    if (!proto::valid_host_name(p.target) || p.target == r.agent) continue;
    PairFlows* pf = pair_for(p.protocol, p.target);
    if (!pf) continue;
    FlowState* f = flow_in(*pf, p.src_port, true);
    if (!f) continue;
    if (p.dst_port) f->dst_port = p.dst_port;
    TracedPath t;
    t.traced_at_unix_ns = p.traced_at_unix_ns;
    t.hops = sanitise_hops(p.hops, t.looped);
    t.reached = p.reached && !t.looped;
    add_trace(*f, std::move(t));
  }
}

std::vector<FlowObservation> FlowTable::observations(proto::Protocol protocol, int64_t now_unix_ns) const {
  const int64_t oldest = now_unix_ns - 3 * mesh_.window_ns();
  std::vector<FlowObservation> out;
  std::vector<FlowState::Previous> before_latest;  // per per-flow observation (end 0: none)
  // The pairs' latest windows: each becomes its flows' observations, or one with src_port 0.
  for (const PairWindow& pw : mesh_.latest(protocol)) {
    if (pw.window.end_unix_ns < oldest) continue;
    const size_t before = out.size();
    {
      Shard& sh = shard_of(pw.src);
      std::lock_guard lk(sh.mu);
      if (auto it = sh.pairs.find(pair_key(protocol, pw.src, pw.dst)); it != sh.pairs.end()) {
        for (const FlowState& f : it->second.flows) {
          if (!f.has_window || f.end_unix_ns < oldest) continue;
          FlowObservation o;
          o.protocol = protocol;
          o.src = pw.src;
          o.dst = pw.dst;
          o.src_port = f.src_port;
          o.dst_port = f.dst_port;
          o.start_unix_ns = f.start_unix_ns;
          o.end_unix_ns = f.end_unix_ns;
          o.sent = f.latest.sent;
          o.lost = f.latest.lost;
          o.rtt_p50_ns = f.latest.network_rtt_p50_ns;
          o.baseline_rtt_ns = f.baseline_rtt_ns;
          o.responder_delay_p50_ns = pw.window.responder_delay.p50_ns;  // the responder is the pair's
          if (!f.paths.empty()) {
            o.hops = f.paths.back().hops;
            // The latest path it changed from: where a flapping flow's paths differ.
            for (size_t i = f.paths.size() - 1; i-- > 0;)
              if (!same_path(f.paths[i], f.paths.back())) {
                o.other_hops = f.paths[i].hops;
                break;
              }
          }
          if (f.home_held) o.home_hops = f.home_hops;
          o.path_flapping = flapping_at(f, now_unix_ns);
          out.push_back(std::move(o));
          before_latest.resize(out.size());
          before_latest.back() = f.previous;
        }
      }
    }
    if (out.size() != before) continue;
    FlowObservation o;
    o.protocol = protocol;
    o.src = pw.src;
    o.dst = pw.dst;
    o.dst_port = port_of(pw.window.target_address);
    o.start_unix_ns = pw.window.start_unix_ns;
    o.end_unix_ns = pw.window.end_unix_ns;
    o.sent = pw.window.sent;
    o.lost = pw.window.lost;
    o.rtt_p50_ns = pw.median_rtt_ns();
    o.baseline_rtt_ns = pw.baseline_rtt_ns;
    o.responder_delay_p50_ns = pw.window.responder_delay.p50_ns;
    out.push_back(std::move(o));
  }
  // The cut (see the declaration): the end 80 % of the per-flow observations have reached.
  before_latest.resize(out.size());
  std::vector<int64_t> ends;
  for (const FlowObservation& o : out)
    if (o.src_port) ends.push_back(o.end_unix_ns);
  if (ends.empty()) return out;
  const auto k = static_cast<ptrdiff_t>(ends.size() / 5);
  std::nth_element(ends.begin(), ends.begin() + k, ends.end());
  const int64_t cut = ends[static_cast<size_t>(k)];
  size_t kept = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    FlowObservation& o = out[i];
    const FlowState::Previous& p = before_latest[i];
    // Behind (a flow, or a pair without flows): its latest window ended before the cut's began (its
    // agent's report for the cut's window is not in yet). Left out until it comes rather than read
    // over an older interval.
    if (o.end_unix_ns <= cut - (o.end_unix_ns - o.start_unix_ns)) continue;
    if (o.src_port && o.end_unix_ns > cut && p.end_unix_ns != 0 && p.end_unix_ns <= cut &&
        p.end_unix_ns >= oldest) {
      o.start_unix_ns = p.start_unix_ns;
      o.end_unix_ns = p.end_unix_ns;
      o.sent = p.sent;
      o.lost = p.lost;
      o.rtt_p50_ns = p.network_rtt_p50_ns;
    }
    if (kept != i) out[kept] = std::move(o);
    ++kept;
  }
  out.resize(kept);
  return out;
}

bool FlowTable::flapping_at(const FlowState& f, int64_t now_unix_ns) {
  // Back on its home path: held from when it was last seen off it.
  const bool home = f.last_off_home_unix_ns > 0 && !f.paths.empty() &&
                    f.paths.back().traced_at_unix_ns > f.last_off_home_unix_ns;
  const int64_t since = home ? f.last_off_home_unix_ns : f.last_change_unix_ns;
  if (f.path_changes == 0 || now_unix_ns - since > kFlapHoldNs) return false;
  size_t first = f.paths.size();
  while (first > 0 && now_unix_ns - f.paths[first - 1].traced_at_unix_ns <= kFlapHorizonNs) --first;
  return flaps(f.paths, first);
}

PairFlows FlowTable::pair(proto::Protocol protocol, const std::string& src, const std::string& dst,
                          int64_t now_unix_ns) const {
  Shard& sh = shard_of(src);
  std::lock_guard lk(sh.mu);
  if (auto it = sh.pairs.find(pair_key(protocol, src, dst)); it != sh.pairs.end()) {
    PairFlows p = it->second;
    for (FlowState& f : p.flows) f.flapping = flapping_at(f, now_unix_ns);
    return p;
  }
  PairFlows empty;
  empty.src = src;
  empty.dst = dst;
  empty.protocol = protocol;
  return empty;
}

std::string pair_flows_json(const PairFlows& p) {
  using nlohmann::json;
  json flows = json::array();
  for (const FlowState& f : p.flows) {
    json paths = json::array();
    for (const TracedPath& t : f.paths)
      paths.push_back({{"traced_at_unix_ns", t.traced_at_unix_ns},
                       {"reached", t.reached},
                       {"looped", t.looped},
                       {"hops", t.hops}});
    json o{{"src_port", f.src_port},
           {"dst_port", f.dst_port},
           {"paths", std::move(paths)},
           {"path_changes", f.path_changes},
           {"last_change_unix_ns", f.last_change_unix_ns},
           {"home_hops", f.home_hops},
           {"home_held", f.home_held},
           {"path_flapping", f.flapping}};
    if (f.has_window) {
      o["window"] = {{"start_unix_ns", f.start_unix_ns},
                     {"end_unix_ns", f.end_unix_ns},
                     {"sent", f.latest.sent},
                     {"received", f.latest.received},
                     {"lost", f.latest.lost},
                     {"network_rtt_p50_ns", f.latest.network_rtt_p50_ns},
                     {"baseline_rtt_ns", f.baseline_rtt_ns}};
    }
    flows.push_back(std::move(o));
  }
  return json{
      {"protocol", proto::to_string(p.protocol)}, {"src", p.src}, {"dst", p.dst}, {"flows", std::move(flows)}}
      .dump();
}

}  // namespace weft::controller
