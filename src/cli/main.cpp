// weft: one executable, many subcommands (see command_registry.hpp).
#include <CLI/CLI.hpp>
#include <string>

#include "base/log.hpp"
#include "cli/command_registry.hpp"

int main(int argc, char** argv) {
  CLI::App app{"weft: watches and exercises datacenter networks"};
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error|off")->capture_default_str();
  app.set_version_flag("--version", std::string("weft ") + WEFT_VERSION);

#ifdef WEFT_STACK_ONLY
  // weft-dpdk: only `stack` (with the DPDK device), which `weft stack --device dpdk` runs.
  weft::cli::Root root{app, nullptr, nullptr};
#else
  auto* bench = app.add_subcommand("bench", "Benchmarks (print JSON figures)");
  bench->require_subcommand(1);
  auto* rdma = app.add_subcommand("rdma", "RDMA examples and tools");
  rdma->require_subcommand(1);
  weft::cli::Root root{app, bench, rdma};
#endif
  weft::cli::register_all(root);

  app.parse_complete_callback([&] { weft::init_logging(log_level); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 reports bad arguments by exception; usage errors exit 2 like other Unix tools.
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return weft::cli::exit_code();
}
