// weft: one executable, many subcommands (see command_registry.hpp).
#include "cli/entry.hpp"

int main(int argc, char** argv) {
  return weft::cli::run_program("weft", "weft: watches and exercises datacenter networks", true, argc, argv);
}
