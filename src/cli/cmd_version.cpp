// `weft version`: the build's version, for agents reporting to a controller and for bug reports.
#include <fmt/format.h>

#include "cli/command_registry.hpp"

namespace {
weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto* sub = root.app.add_subcommand("version", "Print the weft version");
  sub->callback([] { fmt::print("weft {}\n", WEFT_VERSION); });
}};
}  // namespace
