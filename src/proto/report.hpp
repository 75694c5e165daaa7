#pragma once
// The agent -> controller report format (POST /api/v1/report). The agent encodes it, the
// controller decodes it; both see it here, in src/proto. Two encodings of the same Report:
//
//  - binary ("application/x-weft-report", what agents send): LEB128 varints, zig-zag for signed
//    values, a name table so a target name is sent once per report. About 40-60 bytes per window,
//    so one controller can take in a million windows a second (see docs/BENCHMARKS.md).
//  - JSON ("application/json"): the same fields, for curl, debugging and tests (docs/api.md).
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
  // Set by decode_binary: the window list's bytes inside the decoded body (valid while the body
  // lives). The controller stores them as they are instead of encoding the windows again.
  std::string_view encoded_windows;
};

// --- binary ------------------------------------------------------------------------------------
std::string encode_binary(const Report& r);
// `max_windows`: a report with more is refused before they are decoded (the controller passes what
// the agent's pinglist allows).
Result<Report> decode_binary(std::string_view bytes, size_t max_windows = kMaxWindowsPerReport);

// Just the window list (name table + windows), used for history blobs.
void append_window_list(std::string& out, std::span<const WindowStats> windows);
Result<std::vector<WindowStats>> decode_window_list(std::string_view bytes);

// --- JSON --------------------------------------------------------------------------------------
std::string encode_json(const Report& r);
// Strict: every field has the right JSON type, unknown protocol names are errors. Missing optional
// fields (health, alarms, percentiles) default to zero.
// Decodes as it parses (each window object is converted and dropped as it ends), so memory stays
// within the body, the decoded windows and one window's JSON tree; values are bounded per window and
// outside the windows.
Result<Report> decode_json(std::string_view text, size_t max_windows = kMaxWindowsPerReport);

// One window as a JSON object (the shape of report.windows[i]; also the Redis store's values).
std::string window_json(const WindowStats& w);
Result<WindowStats> parse_window_json(std::string_view text);

}  // namespace weft::proto
