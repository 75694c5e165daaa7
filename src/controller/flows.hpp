#pragma once
// The controller's per-flow state (issue 24): for every probe flow an agent reports (a pair probed
// from several source ports, proto::FlowStats) its latest window's counters and its usual RTT, and
// for every traced flow (proto::PathTrace) its recent paths, how often the path changed and
// whether it flaps. Fed by ingest (Ingest::handle_report), read by fault localisation
// (observations()) and the drill-down API (GET /api/v1/flows, docs/api.md).
//
// Only reports that carry per-flow counters or paths touch it: an older agent's report costs one
// branch. Pairs without per-flow detail are read from the mesh's latest pair windows when
// observations are asked for, so the heatmap's ingest path stores nothing twice.
//
// Trace answers are untrusted: a hop that is not an IP literal becomes "" (no answer), and a path
// that visits an address twice (a routing loop, or spoofed answers) is cut before the repeat and
// marked looped; a hop missing ("") in one trace matches any address in another, so silent routers
// never look like path changes.
#include <array>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "controller/flow_observation.hpp"
#include "controller/mesh_state.hpp"
#include "proto/report.hpp"

namespace weft::controller {

// One trace of one flow, as kept.
struct TracedPath {
  int64_t traced_at_unix_ns = 0;
  bool reached = false;
  bool looped = false;            // cut at a repeated address
  std::vector<std::string> hops;  // sanitised: IP literals or ""
};

// What the table holds of one flow (also the drill-down API's answer).
struct FlowState {
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  bool has_window = false;  // counters below are set (a flow may be traced before it is counted)
  int64_t start_unix_ns = 0, end_unix_ns = 0;
  proto::FlowStats latest;
  // The window before the latest (end 0: none): localisation reads every flow over the same
  // interval (FlowTable::observations), and a flow whose agent already reported a newer window
  // than most is read at the one before.
  struct Previous {
    int64_t start_unix_ns = 0, end_unix_ns = 0;
    uint64_t sent = 0, lost = 0;
    int64_t network_rtt_p50_ns = 0;
  } previous;
  int64_t baseline_rtt_ns = 0;  // of earlier windows' RTT medians (next_rtt_baseline)
  // Most recent last, at most FlowTable::kPathHistory. A vector: an empty std::deque allocates
  // ~600 bytes, which 2.4 million flows (300,000 pairs x 8) turned into 2 GB.
  std::vector<TracedPath> paths;
  uint64_t path_changes = 0;  // traces whose path differed from the one before
  int64_t last_change_unix_ns = 0;
  bool flapping = false;  // changed in most of the recent traces (see FlowTable::kFlapWindow)
  // The path it held for at least FlowTable::kHomeHeldNs (two traces that far apart, no change
  // between), or its first trace until then; and when its current run of one path began.
  std::vector<std::string> home_hops;
  // Whether home_hops was held kHomeHeldNs (not merely the first trace): only then does the
  // localiser take it as the flow's home. A flow first traced while a link is down is on its
  // detour; taken as home, the healthy cable got its votes (the Clos lab named tor3-spine1 for
  // a flapping tor3-spine2 in 2-14 polls of runs with a young controller).
  bool home_held = false;
  int64_t path_since_unix_ns = 0;
  // When it was last traced off its home path (0: never): a flow back home stops flapping
  // FlowTable::kFlapHoldNs after that, not after its return (traces of flows that lost while
  // a link flapped come in for a while after the repair, each finding its flow back home).
  int64_t last_off_home_unix_ns = 0;
};

struct PairFlows {
  std::string src, dst;
  proto::Protocol protocol = proto::Protocol::udp;
  std::vector<FlowState> flows;  // by src_port, at most FlowTable::kMaxFlowsPerPair
};

// The drill-down's JSON (GET /api/v1/flows, docs/api.md).
std::string pair_flows_json(const PairFlows& p);

class FlowTable {
 public:
  static constexpr size_t kPathHistory = 8;
  // Flapping: at least kFlapMinTraces traces, and the path changed in more than half of the last
  // kFlapWindow ones.
  static constexpr size_t kFlapWindow = 6;
  static constexpr size_t kFlapMinTraces = 3;
  // Or this many changes among the traces of the last kFlapHorizonNs: a flow traced every second
  // or two (the agent follows a flow whose path changed) sees a 3 s flap change only every few
  // traces, never in most of them. A fault and its repair are two changes, not a flap.
  static constexpr size_t kFlapMinChanges = 3;
  // With fewer changes than that, a path that left and came back flaps only when it came back
  // within this long (from the trace that first found it away to the one that found it back): a
  // spine dead for 12 s and brought back is an outage and its repair, and once it is over its
  // flows' return is not a flap (the Clos lab named tor1-spine1 flapping for 4-7 s after each
  // dead_spine repair). A link down 3 s at a time comes back well inside it; one that flaps slower
  // reaches kFlapMinChanges.
  static constexpr int64_t kFlapReturnNs = 8'000'000'000;
  // A path held this long becomes the flow's home path: two traces this far apart, no change
  // between. A flow is traced every few minutes, and when it loses; in the Clos lab the flows of
  // a cable that then flapped had been traced twice, 26-29 s apart, by earlier faults' losses.
  // At 30 s none of them had a home, and with no home the flapping cable was not named for over
  // 30 s (CI's lab_clos_blame); at 20 s it is named within 2-4 s. A first trace taken while a
  // link is down is still no home: the flow's next trace, 20 s or more later, must find the same
  // path.
  static constexpr int64_t kHomeHeldNs = 20'000'000'000;
  // A flow stops flapping this long after its last path change: traces come only every few
  // minutes, or when the flow loses, so a flap that stopped would otherwise keep its flag until
  // enough quiet traces came in (a repaired link stayed "flapping" for minutes).
  static constexpr int64_t kFlapHoldNs = 15'000'000'000;
  static constexpr int64_t kFlapHorizonNs = 60'000'000'000;
  static constexpr size_t kMaxFlowsPerPair = 2 * proto::kMaxFlowsPerWindow;
  static constexpr size_t kMaxPairsPerSource = 20'000;

  // `mesh` gives the pair windows of pairs without per-flow detail (observations()).
  explicit FlowTable(const MeshView& mesh) : mesh_(mesh) {}

  // A validated, accepted report. Windows older than a flow's latest are ignored (a retried batch).
  // `keep_windows`/`keep_paths` (sized to r.windows/r.paths, or empty for all): the windows' flows
  // and the paths the report policy lets this agent report (report_policy.hpp).
  void ingest(const proto::Report& r, std::span<const uint8_t> keep_windows = {},
              std::span<const uint8_t> keep_paths = {});

  // Every flow's latest window for `protocol`: per-flow where the agent reported flows, else one
  // observation per pair with src_port 0. Windows that ended more than three window lengths
  // before `now_unix_ns` are left out (the pair stopped being probed). One cut through time: the
  // window end that at least 80 % of the flows have reached is the cut, and a flow whose latest
  // window ends after it is read at its previous window (agents report at different moments; a
  // fault that began a moment ago is otherwise in some agents' windows only, and looks like those
  // agents' own fault). A flow (or a pair without flows) whose latest window ended before the cut's
  // window began is left out
  // until its next one comes: read beside the others, it told of an interval they had left (the
  // Clos lab named a host under a congested ToR as lossy just after the repair: its reports,
  // which cross that ToR, came late, and its latest window was still from inside the congestion).
  // An agent whose clock is a window or more behind is left out of localisation this way.
  std::vector<FlowObservation> observations(proto::Protocol protocol, int64_t now_unix_ns) const;

  // One pair's flows (the drill-down), empty when none are held; `flapping` as of `now_unix_ns`.
  PairFlows pair(proto::Protocol protocol, const std::string& src, const std::string& dst,
                 int64_t now_unix_ns) const;
  // Whether the flow flaps at `now_unix_ns`: the rule above over its traces of the last
  // kFlapHorizonNs only, and its last change at most kFlapHoldNs old. A lone trace that finds the
  // path changed back a minute after a flap is a change, not a flap.
  static bool flapping_at(const FlowState& f, int64_t now_unix_ns);

  // The rules above, exposed for tests.
  static std::vector<std::string> sanitise_hops(const std::vector<std::string>& hops, bool& looped);
  // Same path: equal where both answered ("" matches anything); different lengths only count when
  // both traces reached the target.
  static bool same_path(const TracedPath& a, const TracedPath& b);

 private:
  struct Shard {
    mutable std::mutex mu;
    // key: protocol byte + src + '\n' + dst
    std::unordered_map<std::string, PairFlows> pairs;
    std::unordered_map<std::string, size_t> pairs_per_source;
  };
  static constexpr size_t kShards = 16;
  Shard& shard_of(std::string_view src) const;
  static FlowState* flow_in(PairFlows& p, uint16_t src_port, bool create);
  static void add_trace(FlowState& f, TracedPath t);

  const MeshView& mesh_;
  mutable std::array<Shard, kShards> shards_;
};

}  // namespace weft::controller
