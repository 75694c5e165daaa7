// `weft bench localise`: fault localisation's accuracy and cost on a simulated leaf-spine Clos
// (controller/sim/localise_bench.hpp). docs/localisation.md explains the setup; docs/BENCHMARKS.md
// has the figures.
#include <memory>

#include "cli/command_registry.hpp"
#include "controller/sim/localise_bench.hpp"

namespace {

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto* sub = root.bench->add_subcommand(
      "localise",
      "Fault localisation on a simulated leaf-spine Clos: precision, recall and CPU against today's blame");
  auto o = std::make_shared<weft::controller::sim::LocaliseBenchOptions>();
  weft::controller::sim::add_localise_bench_options(*sub, *o);
  sub->callback([o] { weft::cli::set_exit_code(weft::controller::sim::run_localise_bench(*o)); });
}};

}  // namespace
