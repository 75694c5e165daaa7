// `weft controller --config weft.yaml`: the mesh monitor's controller (docs/controller.md).
// SIGHUP reloads the config (so does editing the file); SIGINT/SIGTERM stop it cleanly.
#include <fmt/format.h>
#include <signal.h>

#include "base/log.hpp"
#include "cli/command_registry.hpp"
#include "controller/controller.hpp"

namespace {

int run_controller(const std::string& path, const std::vector<std::string>& listen_override) {
  auto cfg = weft::controller::load_config(path);
  if (!cfg) {
    fmt::print(stderr, "weft controller: {}\n", cfg.error().message);
    return 2;
  }
  if (!listen_override.empty()) cfg->listen = listen_override;
  // Signals are taken synchronously by this thread; every thread started below inherits the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  weft::controller::Controller c;
  if (auto st = c.start(std::move(*cfg)); !st) {
    fmt::print(stderr, "weft controller: {}\n", st.error().message);
    return 1;
  }
  while (true) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    if (sig == SIGHUP) {
      weft::log().info("SIGHUP: reloading {}", path);
      (void)c.reload();
      continue;
    }
    weft::log().info("signal {}: stopping", sig);
    break;
  }
  c.stop();
  return 0;
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto* sub =
      root.app.add_subcommand("controller", "Run the mesh monitor's controller (API, ingest, pinglists)");
  auto path = std::make_shared<std::string>();
  auto listen = std::make_shared<std::vector<std::string>>();
  sub->add_option("--config,-c", *path, "YAML config file (see deploy/weft.yaml)")->required();
  sub->add_option("--listen", *listen, "HOST:PORT to listen on instead of the config's 'listen'");
  sub->callback([path, listen] { weft::cli::set_exit_code(run_controller(*path, *listen)); });
}};

}  // namespace
