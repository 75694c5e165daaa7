// weft: one executable, many subcommands (see command_registry.hpp). Built again as weft-dpdk
// (WEFT_STACK_ONLY): only `stack`, with the DPDK device, which `weft stack --device dpdk` runs; and
// as weft-controller (WEFT_CONTROLLER_ONLY): `controller`, `token` and `version`, linking no verbs,
// XDP or io_uring library, for the weft-controller package.
#include "cli/entry.hpp"

int main(int argc, char** argv) {
#if defined(WEFT_STACK_ONLY)
  return weft::cli::run_program("weft-dpdk", "weft-dpdk: weft's user-space TCP/IP stack on a DPDK port",
                                false, argc, argv);
#elif defined(WEFT_CONTROLLER_ONLY)
  return weft::cli::run_program("weft-controller", "weft-controller: the weft mesh monitor's controller",
                                false, argc, argv);
#else
  return weft::cli::run_program("weft", "weft: watches and exercises datacenter networks", true, argc, argv);
#endif
}
