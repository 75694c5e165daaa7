#pragma once
// The windows simulated agents send in `weft bench ingest` and `weft bench fleet`: plausible
// numbers (100 probes, a few tens of microseconds RTT, now and then one lost) that pass the
// controller's validation, varied by `salt`.
#include <cstdint>
#include <string>

#include "proto/window_stats.hpp"

namespace weft::sim {

weft::proto::WindowStats sample_window(const std::string& target, int64_t start, uint64_t salt);

}  // namespace weft::sim
