#pragma once
// GET /metrics: the controller's view of the mesh in the Prometheus text format.
//
// By default one set of series per host, not per pair: a 1,000-host mesh has a million pairs, which
// no Prometheus wants to ingest every 15 s. Per-pair series are opt-in and capped. See docs/metrics.md
// for every name, label and unit.
#include <cstddef>
#include <cstdint>
#include <string>

#include "controller/mesh_state.hpp"

namespace weft::controller {

struct MetricsOptions {
  // Also export weft_pair_* series, one set per ordered pair with a current window.
  bool per_pair = false;
  // At most this many weft_pair_* series in one scrape (pairs are taken in (protocol, src, dst)
  // order, so the set is stable between scrapes; the rest is counted in
  // weft_controller_metrics_pairs_omitted).
  size_t max_pair_series = 20000;
};

// Series each exported pair costs (RTT p50/p90/p99/max, loss, late, duplicate, window end).
inline constexpr size_t kSeriesPerPair = 8;

// Renders the whole exposition. `now_unix_ns` decides which windows are current: a window whose
// end is older than two window lengths is stale and left out of host aggregates and pair series.
[[nodiscard]] std::string render_metrics(const MeshView& view, const MetricsOptions& options,
                                         int64_t now_unix_ns);
// The same at the current wall-clock time (what GET /metrics serves).
[[nodiscard]] std::string render_metrics(const MeshView& view, const MetricsOptions& options = {});

}  // namespace weft::controller
