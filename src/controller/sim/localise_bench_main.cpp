// localise_bench: `weft bench localise` as a program of its own, built from the controller and the
// simulator only (no probe engines, no verbs), so the figures can be made without the whole weft.
#include "controller/sim/localise_bench.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Fault localisation on a simulated leaf-spine Clos (same options as `weft bench localise`)"};
  weft::controller::sim::LocaliseBenchOptions o;
  weft::controller::sim::add_localise_bench_options(app, o);
  CLI11_PARSE(app, argc, argv);
  return weft::controller::sim::run_localise_bench(o);
}
