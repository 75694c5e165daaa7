#pragma once
// The localisation benchmark on the simulated Clos (docs/localisation.md "Simulator"): random
// scenarios of faulty elements, the localiser's precision and recall against today's blame, and
// the CPU time of one localisation. Both `weft bench localise` and the small `localise_bench`
// program (which builds without the probe engines) run it.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <vector>

#include "controller/sim/clos_sim.hpp"

namespace weft::controller::sim {

struct LocaliseBenchOptions {
  ClosSpec spec;
  bool untraced = false;
  size_t scenarios = 200;
  std::vector<size_t> fault_counts{1, 2};
  uint64_t seed = 1;
  size_t baseline_scenarios = 20;  // today's blame is slow on a large mesh: judged on the first N only
};

void add_localise_bench_options(CLI::App& app, LocaliseBenchOptions& o);
// Prints the figures on stdout; 0 on success.
int run_localise_bench(const LocaliseBenchOptions& o);

}  // namespace weft::controller::sim
