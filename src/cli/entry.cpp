#include "cli/entry.hpp"

#include <CLI/CLI.hpp>
#include <string>

#include "base/log.hpp"
#include "cli/command_registry.hpp"

namespace weft::cli {

int run_program(const char* program, const char* description, bool groups, int argc, char** argv) {
  CLI::App app{description};
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error|off")->capture_default_str();
  app.set_version_flag("--version", std::string(program) + " " + WEFT_VERSION);

  CLI::App* bench = nullptr;
  CLI::App* rdma = nullptr;
  if (groups) {
    bench = app.add_subcommand("bench", "Benchmarks (print JSON figures)");
    bench->require_subcommand(1);
    rdma = app.add_subcommand("rdma", "RDMA examples and tools");
    rdma->require_subcommand(1);
  }
  Root root{app, bench, rdma};
  register_all(root);

  app.parse_complete_callback([&] { init_logging(log_level); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 reports bad arguments by exception; usage errors exit 2 like other Unix tools.
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return exit_code();
}

}  // namespace weft::cli
