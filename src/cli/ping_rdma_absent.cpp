// `weft-probe ping rdma`: the RDMA prober needs the verbs libraries, which weft-probe leaves out.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

namespace weft::cli {

void add_ping_rdma_options(CLI::App*) {}

int run_ping_rdma(const CLI::App&) {
  fmt::print(stderr, "weft-probe ping: rdma probes are in the full weft executable (weft ping rdma)\n");
  return 2;
}

}  // namespace weft::cli
