// weft: one executable, many subcommands (see command_registry.hpp). Built a second time as
// weft-dpdk (WEFT_STACK_ONLY): only `stack`, with the DPDK device, which `weft stack --device dpdk` runs.
#include "cli/entry.hpp"

int main(int argc, char** argv) {
#ifdef WEFT_STACK_ONLY
  return weft::cli::run_program("weft-dpdk", "weft-dpdk: weft's user-space TCP/IP stack on a DPDK port",
                                false, argc, argv);
#else
  return weft::cli::run_program("weft", "weft: watches and exercises datacenter networks", true, argc, argv);
#endif
}
