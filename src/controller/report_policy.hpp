#pragma once
// What an agent may report, beyond a well-formed report (ingest.cpp's validate_report): the rules
// that keep one agent (or anyone holding its token) from bending the controller's picture of others
// (docs/api.md "POST /api/v1/report", docs/controller.md "Credentials").
//
//  - Identity: with a per-agent token, a report is taken only for the agent the token names (403).
//  - Only windows that have ended: a window may end at most kClockSkewNs after the controller's
//    clock (425 Too Early: the agent keeps the batch and sends it again, nothing is lost to a
//    clock a little ahead). A window to come could otherwise pre-empt the real one, which would
//    then be dropped as its duplicate.
//  - Health within physical bounds (400): a CPU share, memory and counters no host can have.
//  - Targets: a window counts only if its (protocol, target) is in the agent's pinglist, or was in it
//    when the window began (a target that left mid-window, a spooled batch). Windows to other
//    targets are not kept (counted `refused` in the answer and in
//    weft_controller_ingest_windows_total{result="refused"}): 10,000 made-up targets add nothing to the mesh.
//    Windows begun before this controller first saw the agent's list (after a restart, its peers
//    may count as down until they report) count if the target is a registered agent.
//  - Size: at most kWindowsPerTarget windows per target the agent may report, and a traced path per
//    flow of each (max_paths), so decoding a report costs memory in proportion to what can be kept,
//    not to what was sent.
//  - Per-flow counters ride on their window and are kept with it; a traced path (report.paths) is
//    kept only if its target passes the same rule at the time it was traced (flows.hpp).
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.hpp"
#include "controller/mesh.hpp"
#include "proto/report.hpp"

namespace weft::controller {

class ReportPolicy {
 public:
  static constexpr int64_t kClockSkewNs = 2'000'000'000;
  // Windows per allowed target in one report: a batch holds the windows that ended in one report
  // interval (one per target when the report interval is shorter than the window), a resent batch
  // the same; the rest is room for a short window.
  static constexpr size_t kWindowsPerTarget = 8;
  static constexpr size_t kMinWindows = 64;
  static constexpr size_t kMinPaths = 4096;
  // Health bounds (docs/api.md).
  static constexpr double kMaxCpuPercent = 100.0 * 64;  // 64 cores: more than an agent has threads
  static constexpr uint64_t kMaxRssKb = 1ull << 32;     // 4 TiB
  static constexpr double kMaxProbesPerS = 1e8;
  static constexpr uint64_t kMaxWindowCounter = 1ull << 40;  // dropped/spooled windows
  static constexpr uint64_t kMaxRestarts = 1ull << 32;

  explicit ReportPolicy(Mesh& mesh) : mesh_(mesh) {}

  struct Refusal {
    int status = 0;  // 0: none
    std::string message;
  };
  // The whole-report rules: identity (`bound_agent` "" when the credential names no agent), ended
  // windows, health.
  Refusal check(const proto::Report& r, std::string_view bound_agent, int64_t now_ns) const;

  // How many windows and traced paths a report of `agent` may carry (decode stops beyond them):
  // kWindowsPerTarget windows per target it may report (at least kMinWindows), and one path per
  // flow of each such target (at least kMinPaths, what an agent holds back while its reports fail,
  // agent/run_state.hpp).
  struct Bounds {
    size_t windows = 0, paths = 0;
  };
  Bounds bounds(const std::string& agent, int64_t now_ns);
  size_t max_windows(const std::string& agent, int64_t now_ns) { return bounds(agent, now_ns).windows; }
  size_t max_paths(const std::string& agent, int64_t now_ns) { return bounds(agent, now_ns).paths; }

  // Marks in `keep` (sized to r.windows) the windows whose target the agent may report; returns how
  // many it may not. The agent must be registered.
  size_t allowed_targets(const proto::Report& r, int64_t now_ns, std::vector<uint8_t>& keep);
  // The same, and in `keep_paths` (sized to r.paths) the traced paths (report.paths) to targets the
  // agent may report, by when each was traced. Refused paths are not counted in the result.
  size_t allowed_targets(const proto::Report& r, int64_t now_ns, std::vector<uint8_t>& keep,
                         std::vector<uint8_t>& keep_paths);

  // An agent removed: forget what it was allowed.
  void forget(const std::string& agent);

 private:
  // The targets one agent was given, per protocol: those listed now, sorted (a report's windows
  // usually come in list order, so most are found by comparing with the one after the last found:
  // a hash lookup per window into a million-entry table was most of the policy's cost at 300,000
  // pairs), and those that left the list, with when.
  struct Book {
    std::mutex mu;
    uint64_t version = 0;
    bool filled = false;
    int64_t filled_ns = 0;  // when this controller first learnt the agent's list (start, restart)
    struct Hash {
      using is_transparent = void;
      size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    std::array<std::vector<std::string>, 3> listed;
    std::array<std::unordered_map<std::string, int64_t, Hash, std::equal_to<>>, 3> left_ns;
    size_t size() const {
      size_t n = 0;
      for (size_t p = 0; p < listed.size(); ++p) n += listed[p].size() + left_ns[p].size();
      return n;
    }
  };
  using Cursors = std::array<size_t, 3>;  // per protocol: where the next window's target is expected
  std::shared_ptr<Book> book(const std::string& agent);
  // Whether `target` on `protocol` was the agent's to probe at `began_ns` (b.mu held).
  bool may_report(const Book& b, proto::Protocol protocol, const std::string& target, int64_t began_ns,
                  Cursors& cursors) const;
  // Brings the book up to the agent's current pinglist (b.mu held).
  void refresh_locked(const std::string& agent, Book& b, int64_t now_ns);

  Mesh& mesh_;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Book>> books_;
};

}  // namespace weft::controller
