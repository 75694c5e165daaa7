#include "controller/report_policy.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace weft::controller {

ReportPolicy::Refusal ReportPolicy::check(const proto::Report& r, std::string_view bound_agent,
                                          int64_t now_ns) const {
  if (!bound_agent.empty() && r.agent != bound_agent)
    return {403, fmt::format("this token is agent '{}''s; it cannot report as '{}'", bound_agent,
                             r.agent.substr(0, 64))};
  const auto& h = r.health;
  if (!(h.cpu_percent >= 0 && h.cpu_percent <= kMaxCpuPercent))
    return {400, fmt::format("health.cpu_percent: {} is outside [0, {}]", h.cpu_percent, kMaxCpuPercent)};
  if (!(h.probes_per_s >= 0 && h.probes_per_s <= kMaxProbesPerS))
    return {400, fmt::format("health.probes_per_s: {} is outside [0, {}]", h.probes_per_s, kMaxProbesPerS)};
  if (h.rss_kb > kMaxRssKb) return {400, fmt::format("health.rss_kb: {} exceeds {}", h.rss_kb, kMaxRssKb)};
  if (h.dropped_windows > kMaxWindowCounter || h.spooled_windows > kMaxWindowCounter)
    return {400, fmt::format("health.dropped_windows/spooled_windows: more than {}", kMaxWindowCounter)};
  if (h.prober_restarts > kMaxRestarts)
    return {400, fmt::format("health.prober_restarts: {} exceeds {}", h.prober_restarts, kMaxRestarts)};
  for (size_t i = 0; i < r.windows.size(); ++i)
    if (r.windows[i].end_unix_ns > now_ns + kClockSkewNs)
      return {425, fmt::format("windows[{}]: ends {:.3f} s after the controller's clock (allowed: {} s); "
                               "a window is reported once it has ended (check the agent's clock)",
                               i, static_cast<double>(r.windows[i].end_unix_ns - now_ns) / 1e9,
                               kClockSkewNs / 1'000'000'000)};
  return {};
}

std::shared_ptr<ReportPolicy::Book> ReportPolicy::book(const std::string& agent) {
  std::lock_guard lk(mu_);
  auto& b = books_[agent];
  if (!b) b = std::make_shared<Book>();
  return b;
}

void ReportPolicy::forget(const std::string& agent) {
  std::lock_guard lk(mu_);
  books_.erase(agent);
}

void ReportPolicy::refresh_locked(const std::string& agent, Book& b, int64_t now_ns) {
  const uint64_t version = mesh_.pinglist_version(agent);
  if (b.filled && version == b.version) return;
  // Only the names are taken, from the shared list: no copy of every target's addresses.
  const std::shared_ptr<const proto::Pinglist> pl = mesh_.pinglist_shared(agent);
  std::array<std::vector<std::string>, 3> now_listed;
  for (const auto& p : pl->protocols) {
    auto& v = now_listed[static_cast<size_t>(p.protocol) % now_listed.size()];
    v.reserve(v.size() + p.targets.size());
    for (const auto& t : p.targets) v.push_back(t.name);
  }
  for (size_t p = 0; p < now_listed.size(); ++p) {
    auto& v = now_listed[p];
    if (!std::is_sorted(v.begin(), v.end())) std::sort(v.begin(), v.end());  // pinglists come sorted
    v.erase(std::unique(v.begin(), v.end()), v.end());
    // What was listed and is not any more leaves now; what is listed again is no longer "left".
    for (auto& name : b.listed[p])
      if (!std::binary_search(v.begin(), v.end(), name)) b.left_ns[p].emplace(std::move(name), now_ns);
    for (const auto& name : v) b.left_ns[p].erase(name);
    b.listed[p] = std::move(v);
  }
  // A target gone for longer than retention can have no window left to deliver.
  const int64_t forget_before = now_ns - mesh_.config()->retention_ns;
  for (auto& m : b.left_ns) std::erase_if(m, [&](const auto& kv) { return kv.second < forget_before; });
  b.version = pl->version;
  if (!b.filled) b.filled_ns = now_ns;
  b.filled = true;
}

ReportPolicy::Bounds ReportPolicy::bounds(const std::string& agent, int64_t now_ns) {
  auto b = book(agent);
  std::lock_guard lk(b->mu);
  refresh_locked(agent, *b, now_ns);
  const size_t targets = b->size();
  return {std::max(kMinWindows, targets * kWindowsPerTarget),
          std::max(kMinPaths, targets * proto::kMaxFlowsPerWindow)};
}

bool ReportPolicy::may_report(const Book& b, proto::Protocol protocol, const std::string& target,
                              int64_t began_ns, Cursors& cursors) const {
  const size_t p = static_cast<size_t>(protocol) % b.listed.size();
  const auto& v = b.listed[p];
  size_t& at = cursors[p];
  // Listed now: most often the target after the last one found.
  if (at < v.size() && v[at] == target) {
    ++at;
    return true;
  }
  if (auto it = std::lower_bound(v.begin(), v.end(), target); it != v.end() && *it == target) {
    at = static_cast<size_t>(it - v.begin()) + 1;
    return true;
  }
  // Left the list after the window began (its probes were due then).
  const auto& m = b.left_ns[p];
  if (auto it = m.find(std::string_view(target)); it != m.end() && began_ns < it->second + kClockSkewNs)
    return true;
  // A window begun before this controller knew the agent's list (a restart: the agent delivers
  // what it measured meanwhile, while its peers may still count as down) counts if its target is
  // a registered agent: made-up names are still refused.
  return began_ns < b.filled_ns + kClockSkewNs && mesh_.is_registered(target);
}

size_t ReportPolicy::allowed_targets(const proto::Report& r, int64_t now_ns, std::vector<uint8_t>& keep) {
  std::vector<uint8_t> keep_paths;
  return allowed_targets(r, now_ns, keep, keep_paths);
}

size_t ReportPolicy::allowed_targets(const proto::Report& r, int64_t now_ns, std::vector<uint8_t>& keep,
                                     std::vector<uint8_t>& keep_paths) {
  keep.assign(r.windows.size(), 0);
  keep_paths.assign(r.paths.size(), 0);
  auto b = book(r.agent);
  std::lock_guard lk(b->mu);
  refresh_locked(r.agent, *b, now_ns);
  size_t refused = 0;
  Cursors cursors{};
  for (size_t i = 0; i < r.windows.size(); ++i) {
    const auto& w = r.windows[i];
    keep[i] = may_report(*b, w.protocol, w.target, w.start_unix_ns, cursors);
    refused += !keep[i];
  }
  // A traced path is a flow's detail: it follows the same rule, at the time it was traced.
  cursors = {};
  for (size_t i = 0; i < r.paths.size(); ++i)
    keep_paths[i] =
        may_report(*b, r.paths[i].protocol, r.paths[i].target, r.paths[i].traced_at_unix_ns, cursors);
  return refused;
}

}  // namespace weft::controller
