#include "controller/metrics_renderer.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <string_view>
#include <vector>

#include "controller/blame.hpp"
#include "controller/metrics_text.hpp"

namespace weft::controller {

namespace {

constexpr std::array kProtocols = {proto::Protocol::udp, proto::Protocol::tcp, proto::Protocol::rdma};
constexpr double kNsPerS = 1e9;

// What one host's current windows add up to, in one direction (as prober or as target).
struct HostAgg {
  uint64_t peers = 0;        // pairs with a current window
  uint64_t unreachable = 0;  // ... of which every probe was lost
  uint64_t sent = 0;
  uint64_t lost = 0;
  std::vector<int64_t> p50_ns;  // per peer, pairs with at least one RTT sample
  int64_t worst_p99_ns = -1;
};

struct ProtocolData {
  proto::Protocol protocol;
  std::vector<PairWindow> pairs;  // as MeshView returns them, sorted by (src, dst)
  std::vector<bool> current;
  size_t stale = 0;
  // host -> aggregates; index 0 = as source ("src"), 1 = as destination ("dst").
  std::map<std::string, std::array<HostAgg, 2>, std::less<>> hosts;
};

bool is_current(const PairWindow& p, int64_t now_ns, int64_t window_ns) {
  if (window_ns <= 0) return true;
  return p.window.end_unix_ns >= now_ns - 2 * window_ns;
}

double median_s(std::vector<int64_t>& v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const double m = n % 2 == 1 ? static_cast<double>(v[n / 2])
                              : (static_cast<double>(v[n / 2 - 1]) + static_cast<double>(v[n / 2])) / 2.0;
  return m / kNsPerS;
}

void add(HostAgg& a, const PairWindow& p) {
  const auto& w = p.window;
  a.peers++;
  a.sent += w.sent;
  a.lost += w.lost;
  if (w.sent > 0 && w.received == 0) a.unreachable++;
  if (w.network_rtt.count > 0) {
    a.p50_ns.push_back(w.network_rtt.p50_ns);
    a.worst_p99_ns = std::max(a.worst_p99_ns, w.network_rtt.p99_ns);
  }
}

double ratio(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

std::vector<ProtocolData> collect(const MeshView& view, const std::vector<AgentInfo>& agents,
                                  int64_t now_ns) {
  const int64_t window_ns = view.window_ns();
  std::vector<ProtocolData> out;
  for (auto proto : kProtocols) {
    ProtocolData d{proto, view.latest(proto), {}, 0, {}};
    // Every agent that speaks the protocol gets host series even with no current window: a host
    // whose peers went silent must show as 0 peers, not vanish.
    for (const auto& a : agents) {
      if (std::ranges::find(a.protocols, proto) != a.protocols.end()) d.hosts[a.name];
    }
    d.current.reserve(d.pairs.size());
    for (const auto& p : d.pairs) {
      const bool cur = is_current(p, now_ns, window_ns);
      d.current.push_back(cur);
      auto& src = d.hosts[p.src];
      auto& dst = d.hosts[p.dst];
      if (!cur) {
        d.stale++;
        continue;
      }
      add(src[0], p);
      add(dst[1], p);
    }
    if (!d.pairs.empty() || !d.hosts.empty()) out.push_back(std::move(d));
  }
  return out;
}

constexpr std::array<std::string_view, 2> kDirection = {"src", "dst"};

void render_controller(PromText& t, const MeshView& view, const std::vector<AgentInfo>& agents,
                       const std::vector<ProtocolData>& data) {
  size_t up = 0;
  for (const auto& a : agents) up += a.state == AgentState::up ? 1 : 0;
  t.family("weft_controller_agents", PromType::gauge, "Agents known to the controller, by state.");
  t.sample({{"state", "up"}}, static_cast<double>(up));
  t.sample({{"state", "down"}}, static_cast<double>(agents.size() - up));

  t.family("weft_controller_window_seconds", PromType::gauge, "Length of one probe window.");
  t.sample(static_cast<double>(view.window_ns()) / kNsPerS);

  const IngestCounters c = view.ingest_counters();
  // Raw counters only: a derived "accepted" count could step backwards between a request being
  // counted and its outcome, which Prometheus would read as a counter reset.
  t.family("weft_controller_ingest_requests_total", PromType::counter, "Ingest requests received.");
  t.sample(static_cast<double>(c.requests));
  t.family("weft_controller_ingest_rejected_requests_total", PromType::counter,
           "Ingest requests answered with a 4xx (bad body, bad token, unknown agent).");
  t.sample(static_cast<double>(c.requests_rejected));
  t.family("weft_controller_ingest_store_errors_total", PromType::counter,
           "Ingest requests answered with a 5xx because the store failed.");
  t.sample(static_cast<double>(c.store_errors));
  t.family("weft_controller_ingest_windows_total", PromType::counter,
           "Windows received from agents, by outcome (duplicate: a resend already held, not counted twice).");
  t.sample({{"result", "accepted"}}, static_cast<double>(c.windows_accepted));
  t.sample({{"result", "duplicate"}}, static_cast<double>(c.windows_duplicate));
  t.sample({{"result", "stale"}}, static_cast<double>(c.windows_stale));
  t.sample({{"result", "refused"}}, static_cast<double>(c.windows_refused));
  t.family("weft_controller_ingest_received_bytes_total", PromType::counter,
           "Bytes of ingest request bodies received.");
  t.sample(static_cast<double>(c.bytes));

  const StoreInfo s = view.store_info();
  t.family("weft_controller_store_up", PromType::gauge,
           "1 if the result store answers, 0 if its last operation failed.");
  t.sample({{"kind", s.kind}}, s.healthy ? 1 : 0);
  t.family("weft_controller_store_pairs", PromType::gauge,
           "Ordered pairs whose latest window the controller holds, by protocol and freshness.");
  for (const auto& d : data) {
    const char* proto = proto::to_string(d.protocol);
    t.sample({{"protocol", proto}, {"freshness", "current"}}, static_cast<double>(d.pairs.size() - d.stale));
    t.sample({{"protocol", proto}, {"freshness", "stale"}}, static_cast<double>(d.stale));
  }
}

void render_agents(PromText& t, const std::vector<AgentInfo>& agents) {
  t.family("weft_agent_up", PromType::gauge, "1 if the agent reports on time, 0 once it is marked down.");
  for (const auto& a : agents) t.sample({{"host", a.name}}, a.state == AgentState::up ? 1 : 0);
  t.family("weft_agent_info", PromType::gauge, "Always 1; the agent's version as a label.");
  for (const auto& a : agents) t.sample({{"host", a.name}, {"version", a.version}}, 1);
  t.family("weft_agent_last_seen_timestamp_seconds", PromType::gauge,
           "When the controller last heard from the agent (Unix time).");
  for (const auto& a : agents)
    t.sample({{"host", a.name}}, static_cast<double>(a.last_seen_unix_ns) / kNsPerS);
  t.family("weft_agent_cpu_ratio", PromType::gauge,
           "CPU the agent used, as a fraction of one core, over its last report interval.");
  for (const auto& a : agents) t.sample({{"host", a.name}}, a.health.cpu_percent / 100.0);
  t.family("weft_agent_resident_memory_bytes", PromType::gauge, "Resident set size of the agent process.");
  for (const auto& a : agents) t.sample({{"host", a.name}}, static_cast<double>(a.health.rss_kb) * 1024.0);
  t.family("weft_agent_probes_per_second", PromType::gauge,
           "Probes the agent sends per second, all protocols.");
  for (const auto& a : agents) t.sample({{"host", a.name}}, a.health.probes_per_s);
  t.family("weft_agent_spooled_windows", PromType::gauge,
           "Windows waiting in the agent's buffer or disk spool.");
  for (const auto& a : agents) t.sample({{"host", a.name}}, static_cast<double>(a.health.spooled_windows));
  t.family("weft_agent_dropped_windows_total", PromType::counter,
           "Windows the agent threw away because its spool was full (since the agent started).");
  for (const auto& a : agents) t.sample({{"host", a.name}}, static_cast<double>(a.health.dropped_windows));
  t.family("weft_agent_prober_restarts_total", PromType::counter,
           "Probers the agent had to restart (since the agent started).");
  for (const auto& a : agents) t.sample({{"host", a.name}}, static_cast<double>(a.health.prober_restarts));
  t.family("weft_agent_alarms", PromType::gauge, "Alarms currently raised for the agent.");
  for (const auto& a : agents) t.sample({{"host", a.name}}, static_cast<double>(a.alarms.size()));
}

void render_hosts(PromText& t, std::vector<ProtocolData>& data) {
  t.family("weft_host_peers", PromType::gauge,
           "Peers with a current window, as prober (direction=src) or as target (direction=dst).");
  for (const auto& d : data)
    for (const auto& [host, agg] : d.hosts)
      for (size_t k = 0; k < 2; ++k)
        t.sample({{"host", host}, {"protocol", proto::to_string(d.protocol)}, {"direction", kDirection[k]}},
                 static_cast<double>(agg[k].peers));
  t.family("weft_host_peers_unreachable", PromType::gauge, "Peers whose current window lost every probe.");
  for (const auto& d : data)
    for (const auto& [host, agg] : d.hosts)
      for (size_t k = 0; k < 2; ++k)
        t.sample({{"host", host}, {"protocol", proto::to_string(d.protocol)}, {"direction", kDirection[k]}},
                 static_cast<double>(agg[k].unreachable));
  t.family("weft_host_loss_ratio", PromType::gauge,
           "Probes lost over probes sent, summed over the host's current windows.");
  for (const auto& d : data)
    for (const auto& [host, agg] : d.hosts)
      for (size_t k = 0; k < 2; ++k)
        if (agg[k].sent > 0)
          t.sample({{"host", host}, {"protocol", proto::to_string(d.protocol)}, {"direction", kDirection[k]}},
                   ratio(agg[k].lost, agg[k].sent));
  t.family("weft_host_peer_rtt_median_seconds", PromType::gauge,
           "Median over the host's peers of each pair's network RTT p50 (responder time taken out).");
  for (auto& d : data)
    for (auto& [host, agg] : d.hosts)
      for (size_t k = 0; k < 2; ++k)
        if (!agg[k].p50_ns.empty())
          t.sample({{"host", host}, {"protocol", proto::to_string(d.protocol)}, {"direction", kDirection[k]}},
                   median_s(agg[k].p50_ns));
  t.family("weft_host_peer_rtt_worst_seconds", PromType::gauge,
           "Largest network RTT p99 over the host's peers.");
  for (const auto& d : data)
    for (const auto& [host, agg] : d.hosts)
      for (size_t k = 0; k < 2; ++k)
        if (agg[k].worst_p99_ns >= 0)
          t.sample({{"host", host}, {"protocol", proto::to_string(d.protocol)}, {"direction", kDirection[k]}},
                   static_cast<double>(agg[k].worst_p99_ns) / kNsPerS);
}

// The pairs to export: current ones in (protocol, src, dst) order, up to the cap.
struct PairPick {
  std::vector<std::pair<const ProtocolData*, const PairWindow*>> pairs;
  size_t omitted = 0;
};

PairPick pick_pairs(const std::vector<ProtocolData>& data, const MetricsOptions& o) {
  PairPick pick;
  const size_t cap = o.max_pair_series / kSeriesPerPair;
  for (const auto& d : data) {
    for (size_t i = 0; i < d.pairs.size(); ++i) {
      if (!d.current[i]) continue;
      if (pick.pairs.size() < cap)
        pick.pairs.emplace_back(&d, &d.pairs[i]);
      else
        pick.omitted++;
    }
  }
  return pick;
}

void render_pairs(PromText& t, const PairPick& pick) {
  auto labels3 = [](const ProtocolData* d, const PairWindow* p) {
    return std::array<PromLabel, 3>{
        {{"protocol", proto::to_string(d->protocol)}, {"src", p->src}, {"dst", p->dst}}};
  };
  t.family("weft_pair_network_rtt_seconds", PromType::gauge,
           "Network RTT of the pair's latest window (responder time taken out), by statistic.");
  for (const auto& [d, p] : pick.pairs) {
    const auto& r = p->window.network_rtt;
    if (r.count == 0) continue;
    const auto l = labels3(d, p);
    const std::array<std::pair<std::string_view, int64_t>, 4> stats = {
        {{"p50", r.p50_ns}, {"p90", r.p90_ns}, {"p99", r.p99_ns}, {"max", r.max_ns}}};
    for (const auto& [stat, ns] : stats)
      t.sample({l[0], l[1], l[2], {"stat", stat}}, static_cast<double>(ns) / kNsPerS);
  }
  t.family("weft_pair_loss_ratio", PromType::gauge,
           "Probes lost over probes sent in the pair's latest window.");
  for (const auto& [d, p] : pick.pairs) {
    const auto l = labels3(d, p);
    t.sample({l[0], l[1], l[2]}, ratio(p->window.lost, p->window.sent));
  }
  t.family("weft_pair_late_ratio", PromType::gauge,
           "Probes answered after the timeout over probes sent, latest window.");
  for (const auto& [d, p] : pick.pairs) {
    const auto l = labels3(d, p);
    t.sample({l[0], l[1], l[2]}, ratio(p->window.late, p->window.sent));
  }
  t.family("weft_pair_duplicate_ratio", PromType::gauge,
           "Duplicate answers over probes sent, latest window.");
  for (const auto& [d, p] : pick.pairs) {
    const auto l = labels3(d, p);
    t.sample({l[0], l[1], l[2]}, ratio(p->window.duplicate, p->window.sent));
  }
  t.family("weft_pair_window_end_timestamp_seconds", PromType::gauge,
           "End of the pair's latest window (Unix time).");
  for (const auto& [d, p] : pick.pairs) {
    const auto l = labels3(d, p);
    t.sample({l[0], l[1], l[2]}, static_cast<double>(p->window.end_unix_ns) / kNsPerS);
  }
}

// The controller's verdict (blame.hpp) per protocol, for alerting: counts, one series per blamed
// host, and one per blamed link up to kMaxSuspectLinks (a mesh with more has a bigger problem).
constexpr size_t kMaxSuspectLinks = 100;

void render_suspects(PromText& t, const std::vector<ProtocolData>& data, const std::vector<AgentInfo>& agents,
                     const std::vector<GroupInfo>& groups, int64_t now_ns, int64_t window_ns) {
  std::vector<std::string> down;
  for (const auto& a : agents)
    if (a.state == AgentState::down) down.push_back(a.name);
  std::vector<std::pair<const char*, Blame>> verdicts;
  for (const auto& d : data)
    verdicts.emplace_back(
        proto::to_string(d.protocol),
        find_blame(d.pairs, down, now_ns, window_ns, {}, blame_context(d.protocol, agents, groups)));
  t.family("weft_suspect_hosts", PromType::gauge,
           "Hosts the controller blames for bad pairs (GET /api/v1/suspects).");
  for (const auto& [proto, b] : verdicts)
    t.sample({{"protocol", proto}}, static_cast<double>(b.hosts.size()));
  t.family("weft_suspect_links", PromType::gauge, "Bad links (directional pairs) no blamed host explains.");
  for (const auto& [proto, b] : verdicts)
    t.sample({{"protocol", proto}}, static_cast<double>(b.links.size()));
  t.family("weft_suspect_host_bad_pairs", PromType::gauge,
           "Bad pairs of a blamed host in its blamed direction (in, out or both).");
  for (const auto& [proto, b] : verdicts)
    for (const auto& h : b.hosts)
      t.sample({{"protocol", proto}, {"host", h.host}, {"direction", h.direction}},
               static_cast<double>(h.bad_pairs));
  t.family("weft_suspect_link_loss_ratio", PromType::gauge,
           "Loss ratio of a blamed link's latest window (at most 100 links per protocol).");
  for (const auto& [proto, b] : verdicts)
    for (size_t i = 0; i < b.links.size() && i < kMaxSuspectLinks; ++i)
      t.sample({{"protocol", proto}, {"src", b.links[i].src}, {"dst", b.links[i].dst}},
               b.links[i].loss_ratio);
}

}  // namespace

std::string render_metrics(const MeshView& view, const MetricsOptions& options, int64_t now_unix_ns) {
  const std::vector<AgentInfo> agents = view.agents();
  std::vector<ProtocolData> data = collect(view, agents, now_unix_ns);
  PromText t;
  render_controller(t, view, agents, data);
  render_agents(t, agents);
  render_hosts(t, data);
  render_suspects(t, data, agents, view.groups(), now_unix_ns, view.window_ns());
  PairPick pick;
  if (options.per_pair) {
    pick = pick_pairs(data, options);
    render_pairs(t, pick);
  }
  t.family(
      "weft_controller_metrics_pairs_omitted", PromType::gauge,
      "Current pairs left out of weft_pair_* series by the series cap (0 when per-pair series are off).");
  t.sample(static_cast<double>(pick.omitted));
  return t.take();
}

std::string render_metrics(const MeshView& view, const MetricsOptions& options) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return render_metrics(view, options, std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
}

}  // namespace weft::controller
