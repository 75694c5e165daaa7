#pragma once
// Small pieces the controller benchmarks (`weft bench fleet`, `weft bench agents`) share: the load
// average they print beside every figure, and latency percentiles from raw samples.
#include <cstdint>
#include <vector>

namespace weft::sim {

// The 1-minute load average (/proc/loadavg); 0 when it cannot be read.
double load_average();

// The `p` quantile (0..1) of nanosecond samples, in milliseconds (nearest rank; 0 without samples).
double percentile_ms(std::vector<int64_t> ns, double p);

}  // namespace weft::sim
