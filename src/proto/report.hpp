#pragma once
// The agent -> controller report format (POST /api/v1/report). The agent encodes it, the
// controller decodes it; both see it here, in src/proto. Two encodings of the same Report:
//
//  - binary ("application/x-weft-report", what agents send): LEB128 varints, zig-zag for signed
//    values, a name table so a target name is sent once per report. About 40-60 bytes per window,
//    so one controller can take in a million windows a second (see docs/BENCHMARKS.md).
//  - JSON ("application/json"): the same fields, for curl, debugging and tests (docs/api.md).
//
// Binary layout: "WFT1", header, alarms, window list, then optional sections, each a tag byte and
// its content, in increasing tag order, each at most once (a report from before they existed ends
// after the window list, and still decodes):
//   1 flows: count, then per window with flows: window index (increasing), flow count (1..64),
//            per flow: src_port, sent, received, lost, network_rtt_p50_ns (zig-zag)
//   2 paths: count, then per path: protocol byte, target, src_port, dst_port, traced_at (zig-zag),
//            reached byte (0/1), hop count (0..64), hops (strings, "" = no answer)
//
// Decoding only checks the encoding (bounds, lengths, enum values). What the numbers mean
// (counts consistent, timestamps plausible) is checked by the controller's ingest validation.
// The window-list part is also the controller's history record format (store_sqlite).
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "proto/names.hpp"
#include "proto/path_trace.hpp"
#include "proto/window_stats.hpp"

namespace weft::proto {

inline constexpr std::string_view kBinaryContentType = "application/x-weft-report";
inline constexpr size_t kMaxWindowsPerReport = 1'000'000;
inline constexpr size_t kMaxAlarmsPerReport = 256;

struct Health {
  double cpu_percent = 0;
  uint64_t rss_kb = 0;
  double probes_per_s = 0;
  uint64_t dropped_windows = 0;
  uint64_t spooled_windows = 0;
  uint64_t prober_restarts = 0;
};

struct AlarmEvent {
  std::string kind;
  std::string message;
  int64_t unix_ns = 0;
};

struct Report {
  std::string agent;  // the reporting host's registered name (the "src" of every window)
  uint64_t seq = 0;   // per-agent batch number, for logs only (dedup is per window)
  Health health;
  std::vector<AlarmEvent> alarms;
  std::vector<WindowStats> windows;
  std::vector<PathTrace> paths;  // traced flow paths (path_trace.hpp); empty from older agents
  // Set by decode_binary: the window list's bytes inside the decoded body (valid while the body
  // lives). The controller stores them as they are instead of encoding the windows again. They do
  // not include the per-flow counters (those follow the list in a section of their own).
  std::string_view encoded_windows;
};

// --- binary ------------------------------------------------------------------------------------
std::string encode_binary(const Report& r);
// `max_windows`, `max_paths`: a report with more is refused before they are decoded (the controller
// passes what the agent's pinglist allows).
Result<Report> decode_binary(std::string_view bytes, size_t max_windows = kMaxWindowsPerReport,
                             size_t max_paths = kMaxPathsPerReport);

// Just the window list (name table + windows), used for history blobs.
void append_window_list(std::string& out, std::span<const WindowStats> windows);
Result<std::vector<WindowStats>> decode_window_list(std::string_view bytes);

// --- JSON --------------------------------------------------------------------------------------
std::string encode_json(const Report& r);
// Strict: every field has the right JSON type, unknown protocol names are errors. Missing optional
// fields (health, alarms, percentiles) default to zero.
// Decodes as it parses (each window and path object is converted and dropped as it ends), so memory
// stays within the body, the decoded windows and paths and one item's JSON tree; values are bounded
// per window, per path and outside them.
Result<Report> decode_json(std::string_view text, size_t max_windows = kMaxWindowsPerReport,
                           size_t max_paths = kMaxPathsPerReport);

// One window as a JSON object (the shape of report.windows[i]; also the Redis store's values).
std::string window_json(const WindowStats& w);
Result<WindowStats> parse_window_json(std::string_view text);

}  // namespace weft::proto
