#include "controller/report_policy.hpp"

#include <fmt/format.h>

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
  const proto::Pinglist pl = mesh_.pinglist_for(agent);
  // Everything listed before is marked as leaving now; what the new list holds is listed again.
  for (auto& m : b.left_ns)
    for (auto& [name, left] : m)
      if (left == 0) left = now_ns;
  for (const auto& p : pl.protocols) {
    auto& m = b.left_ns[static_cast<size_t>(p.protocol) % b.left_ns.size()];
    for (const auto& t : p.targets) m[t.name] = 0;
  }
  // A target gone for longer than retention can have no window left to deliver.
  const int64_t forget_before = now_ns - mesh_.config()->retention_ns;
  for (auto& m : b.left_ns)
    std::erase_if(m, [&](const auto& kv) { return kv.second != 0 && kv.second < forget_before; });
  b.version = pl.version;
  if (!b.filled) b.filled_ns = now_ns;
  b.filled = true;
}

size_t ReportPolicy::max_windows(const std::string& agent, int64_t now_ns) {
  auto b = book(agent);
  std::lock_guard lk(b->mu);
  refresh_locked(agent, *b, now_ns);
  return std::max(kMinWindows, b->size() * kWindowsPerTarget);
}

size_t ReportPolicy::max_paths(const std::string& agent, int64_t now_ns) {
  auto b = book(agent);
  std::lock_guard lk(b->mu);
  refresh_locked(agent, *b, now_ns);
  return std::max(kMinPaths, b->size() * proto::kMaxFlowsPerWindow);
}

bool ReportPolicy::may_report(const Book& b, proto::Protocol protocol, const std::string& target,
                              int64_t began_ns) const {
  const auto& m = b.left_ns[static_cast<size_t>(protocol) % b.left_ns.size()];
  auto it = m.find(std::string_view(target));
  // Listed now, or left the list after the window began (its probes were due then).
  if (it != m.end() && (it->second == 0 || began_ns < it->second + kClockSkewNs)) return true;
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
  for (size_t i = 0; i < r.windows.size(); ++i) {
    const auto& w = r.windows[i];
    keep[i] = may_report(*b, w.protocol, w.target, w.start_unix_ns);
    refused += !keep[i];
  }
  // A traced path is a flow's detail: it follows the same rule, at the time it was traced.
  for (size_t i = 0; i < r.paths.size(); ++i)
    keep_paths[i] = may_report(*b, r.paths[i].protocol, r.paths[i].target, r.paths[i].traced_at_unix_ns);
  return refused;
}

}  // namespace weft::controller
