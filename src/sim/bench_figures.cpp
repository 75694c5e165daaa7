#include "sim/bench_figures.hpp"

#include <algorithm>
#include <cstdio>

namespace weft::sim {

double load_average() {
  double l = 0;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &l) != 1) l = 0;
    std::fclose(f);
  }
  return l;
}

double percentile_ms(std::vector<int64_t> ns, double p) {
  if (ns.empty()) return 0;
  std::sort(ns.begin(), ns.end());
  size_t i = std::min(ns.size() - 1, static_cast<size_t>(p * static_cast<double>(ns.size())));
  return static_cast<double>(ns[i]) / 1e6;
}

}  // namespace weft::sim
