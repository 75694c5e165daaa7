#include "controller/ingest.hpp"

#include <array>
#include <chrono>
#include <nlohmann/json.hpp>

#include "base/log.hpp"
#include "controller/agent_state.hpp"
#include "proto/report_reply.hpp"

namespace weft::controller {
namespace {

constexpr int64_t kClockSkewNs = 5LL * 60 * 1'000'000'000;  // agents' clocks may be ahead this much
constexpr int64_t kMaxWindowNs = 3600LL * 1'000'000'000;
constexpr int64_t kMaxLatencyNs = 3600LL * 1'000'000'000;
constexpr uint64_t kMaxCount = 1ull << 40;  // more probes than any window can hold: garbage

Status check_summary(const proto::LatencySummary& s, const char* what, uint64_t max_count, size_t i) {
  if (s.count == 0) {
    if (s.min_ns || s.mean_ns || s.p50_ns || s.p90_ns || s.p95_ns || s.p99_ns || s.p999_ns || s.max_ns)
      return fail("windows[{}].{}: count is 0 but values are set", i, what);
    return {};
  }
  if (s.count > max_count)
    return fail("windows[{}].{}.count {} exceeds the probes answered ({})", i, what, s.count, max_count);
  if (s.min_ns < 0 || s.max_ns > kMaxLatencyNs)
    return fail("windows[{}].{}: values must be within [0, 1 h]", i, what);
  if (!(s.min_ns <= s.p50_ns && s.p50_ns <= s.p90_ns && s.p90_ns <= s.p95_ns && s.p95_ns <= s.p99_ns &&
        s.p99_ns <= s.p999_ns && s.p999_ns <= s.max_ns))
    return fail("windows[{}].{}: percentiles must be ordered min <= p50 <= p90 <= p95 <= p99 <= p999 <= max",
                i, what);
  if (s.mean_ns < s.min_ns || s.mean_ns > s.max_ns)
    return fail("windows[{}].{}: mean outside [min, max]", i, what);
  return {};
}

}  // namespace

std::string error_json(std::string_view message) { return nlohmann::json{{"error", message}}.dump(); }

Status validate_report(const proto::Report& r, const Config& cfg, int64_t now_ns) {
  if (!proto::valid_host_name(r.agent))
    return fail("agent: '{}' is not a valid host name", r.agent.substr(0, 64));
  if (!(r.health.cpu_percent >= 0 && r.health.cpu_percent <= 1e5))
    return fail("health.cpu_percent out of range");
  if (!(r.health.probes_per_s >= 0 && r.health.probes_per_s <= 1e9))
    return fail("health.probes_per_s out of range");
  for (size_t i = 0; i < r.alarms.size(); ++i)
    if (!proto::valid_host_name(r.alarms[i].kind)) return fail("alarms[{}].kind: not a valid identifier", i);
  int64_t oldest = now_ns - cfg.retention_ns;
  for (size_t i = 0; i < r.windows.size(); ++i) {
    const auto& w = r.windows[i];
    if (!proto::valid_host_name(w.target))
      return fail("windows[{}].target: '{}' is not a valid host name", i, w.target.substr(0, 64));
    if (w.target == r.agent) return fail("windows[{}].target: an agent does not probe itself", i);
    if (w.target_address.size() > proto::kMaxNameLength)
      return fail("windows[{}].target_address too long", i);
    // Checked first so that end - start below cannot overflow.
    if (w.start_unix_ns <= 0) return fail("windows[{}]: start_unix_ns must be a positive Unix time", i);
    if (w.end_unix_ns <= w.start_unix_ns)
      return fail("windows[{}]: end_unix_ns must be after start_unix_ns", i);
    if (w.end_unix_ns - w.start_unix_ns > kMaxWindowNs) return fail("windows[{}]: longer than one hour", i);
    if (w.end_unix_ns > now_ns + kClockSkewNs)
      return fail("windows[{}]: ends in the future (check the agent's clock)", i);
    if (w.end_unix_ns < oldest) return fail("windows[{}]: older than the retention period", i);
    if (w.sent > kMaxCount) return fail("windows[{}].sent: implausibly large", i);
    if (w.received > w.sent || w.lost > w.sent || w.received + w.lost > w.sent)
      return fail("windows[{}]: received ({}) + lost ({}) exceeds sent ({})", i, w.received, w.lost, w.sent);
    if (w.late > w.lost) return fail("windows[{}]: late ({}) exceeds lost ({})", i, w.late, w.lost);
    if (w.duplicate > kMaxCount || w.malformed > kMaxCount || w.weird > w.received)
      return fail("windows[{}]: duplicate/malformed/weird counts out of range", i);
    if (auto st =
            check_summary(w.rtt_incl_responder_delay, proto::kRttInclResponderDelayField, w.received, i);
        !st)
      return st;
    if (auto st = check_summary(w.network_rtt, proto::kNetworkRttField, w.received, i); !st) return st;
    if (auto st = check_summary(w.responder_delay, proto::kResponderDelayField, w.received, i); !st)
      return st;
  }
  return {};
}

IngestReply Ingest::reject(int status, const std::string& message) {
  mesh_.counters().requests_rejected++;
  return {status, error_json(message)};
}

IngestReply Ingest::handle(std::string_view content_type, std::string_view body, int64_t now_ns,
                           std::string_view bound_agent) {
  auto& c = mesh_.counters();
  c.requests++;
  c.bytes += body.size();
  // A bound agent's report may carry what its pinglist allows, and no more is decoded.
  size_t max_windows = proto::kMaxWindowsPerReport, max_paths = proto::kMaxPathsPerReport;
  if (!bound_agent.empty()) {
    const std::string agent(bound_agent);
    if (!mesh_.is_registered(agent))
      return reject(409, fmt::format("agent '{}' is not registered (POST /api/v1/register first)", agent));
    const ReportPolicy::Bounds b = policy_.bounds(agent, now_ns);
    max_windows = b.windows;
    max_paths = b.paths;
  }
  Result<proto::Report> rep =
      content_type.starts_with(proto::kBinaryContentType) ? proto::decode_binary(body, max_windows, max_paths)
      : content_type.starts_with("application/json")
          ? proto::decode_json(body, max_windows, max_paths)
          : Result<proto::Report>(fail("unsupported Content-Type '{}' (use application/json or {})",
                                       content_type.substr(0, 64), proto::kBinaryContentType));
  if (!rep) {
    mesh_.counters().requests_rejected++;
    return {
        content_type.starts_with("application/json") || content_type.starts_with(proto::kBinaryContentType)
            ? 400
            : 415,
        error_json(rep.error().message)};
  }
  c.requests--;  // handle_report counts it
  return handle_report(*rep, now_ns, bound_agent);
}

IngestReply Ingest::handle_report(const proto::Report& r, int64_t now_ns, std::string_view bound_agent) {
  auto& c = mesh_.counters();
  c.requests++;
  auto cfg = mesh_.config();
  // Malformed first (400: the agent sets such a batch aside), then what this agent may say
  // (403, 425: kept and sent again; 400 for impossible health).
  if (auto st = validate_report(r, *cfg, now_ns); !st) return reject(400, st.error().message);
  if (auto no = policy_.check(r, bound_agent, now_ns); no.status) return reject(no.status, no.message);
  if (!mesh_.is_registered(r.agent))
    return reject(409, fmt::format("agent '{}' is not registered (POST /api/v1/register first)", r.agent));
  // Windows to targets the agent was not given are not kept (report_policy.hpp).
  std::vector<uint8_t> allowed, allowed_paths;
  const uint64_t refused = policy_.allowed_targets(r, now_ns, allowed, allowed_paths);

  mesh_.report_started(r.agent, now_ns);
  struct Done {
    Mesh& mesh;
    const std::string& agent;
    ~Done() { mesh.report_done(agent); }
  } done{mesh_, r.agent};
  const auto arrived = std::chrono::steady_clock::now();

  uint64_t accepted = 0, duplicate = 0, stale = 0;
  Status stored;
  mesh_.with_source(r.agent, [&](Mesh::SourceTxn& txn) {
    // The common case is "all new": then the windows (and the agent's encoding of them) go to the
    // store as they came, without a copy. Otherwise only the accepted ones are copied out.
    std::vector<uint8_t> keep(r.windows.size());
    for (size_t i = 0; i < r.windows.size(); ++i) {
      if (!allowed[i]) continue;
      switch (txn.classify(r.windows[i])) {
        case WindowFate::accepted:
          keep[i] = 1;
          break;
        case WindowFate::duplicate:
          ++duplicate;
          break;
        case WindowFate::stale:
          ++stale;
          break;
      }
    }
    std::vector<proto::WindowStats> some;
    std::span<const proto::WindowStats> fresh = r.windows;
    std::string_view encoded = r.encoded_windows;
    if (duplicate + stale + refused > 0) {
      for (size_t i = 0; i < r.windows.size(); ++i)
        if (keep[i]) some.push_back(r.windows[i]);
      fresh = some;
      encoded = {};
    }
    // Remote write's spool is written before the store commits: a crash between the two leaves a
    // window in the spool alone (pushed after the restart, and the agent, never answered, resends
    // it: the same sample again), never in the store alone (its resend would be a duplicate,
    // never queued, never pushed).
    RemoteWriteQueue::Pending pending;
    txn.unlocked([&] {
      if (remote_write_ && remote_write_->enabled()) pending = remote_write_->prepare(r.agent, fresh);
      stored = store_.append(r.agent, fresh, now_ns, encoded);
    });
    if (!stored) {
      txn.rollback();
      if (remote_write_) remote_write_->abandon(std::move(pending));
      return;
    }
    txn.commit(fresh, now_ns);
    accepted = fresh.size();
    // Each accepted window once (duplicates were left out above), in the agent's order.
    if (remote_write_) remote_write_->commit(std::move(pending));
  });
  if (!stored) {
    c.store_errors++;
    // The agent reached us with a valid report: it is alive whatever the store's state (a Redis
    // outage must not mark every agent down after agent_down_after). Its alarms are recorded with
    // the batch it sends again.
    // Seen when the answer goes out (the store may have taken seconds to fail; the agent waited):
    // now_ns plus the time taken, on the caller's clock. (A stored report's agent is seen at its
    // arrival, as every replica records it from the feed.)
    const int64_t answered_ns = now_ns + std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::steady_clock::now() - arrived)
                                             .count();
    (void)mesh_.touch(r.agent, r.health, {}, answered_ns);
    log().error("ingest from {}: store failed: {}", r.agent, stored.error().message);
    return {503, error_json("store unavailable, retry later: " + stored.error().message)};
  }
  c.windows_accepted += accepted;
  c.windows_duplicate += duplicate;
  c.windows_stale += stale;
  c.windows_refused += refused;
  // Per-flow counters and paths, when the report has any (one branch otherwise), of the windows
  // and paths the policy lets this agent report.
  flows_.ingest(r, allowed, allowed_paths);
  const uint64_t version = mesh_.touch(r.agent, r.health, r.alarms, now_ns);
  // The other replicas list the agent alike: seen now, this health, these alarms.
  if (store_.shared()) store_.publish_agent_state(r.agent, agent_state_json(r.health, r.alarms), now_ns);
  return {200, proto::report_reply_json({accepted, duplicate, stale, version, refused})};
}

}  // namespace weft::controller
