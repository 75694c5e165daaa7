#pragma once
// `weft stack run`: adds the subcommand to `weft stack` (cmd_stack_run.cpp).
#include <CLI/CLI.hpp>

namespace weft::cli {

void add_stack_run(CLI::App* stack);

}  // namespace weft::cli
