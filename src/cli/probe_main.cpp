// weft-probe: `weft responder` and `weft ping udp|tcp` (the same code, options and output) in an
// executable that links only base, proto, net and the IP probe engine, for hosts that run just a
// responder or a prober and should pay for nothing else (issue 17: RSS; docs/probe.md).
#include "cli/entry.hpp"

int main(int argc, char** argv) {
  return weft::cli::run_program("weft-probe", "weft-probe: weft's UDP/TCP responder and ping, alone", false,
                                argc, argv);
}
