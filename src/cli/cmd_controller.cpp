// `weft controller --config weft.yaml`: the mesh monitor's controller (docs/controller.md).
// SIGHUP reloads the config (so does editing the file); SIGINT/SIGTERM stop it cleanly.
#include <fmt/format.h>
#include <signal.h>

#include <atomic>
#include <thread>

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
  // Signals are taken synchronously by one thread; every thread started below inherits the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  // A thread of its own takes the signals, so SIGTERM also stops a start() still waiting for its
  // store (controller.cpp, open_store_patiently); SIGHUP reloads only once the controller serves.
  weft::controller::Controller c;
  std::atomic<bool> serving{false}, start_failed{false};
  std::thread signals([&] {
    while (true) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (sig == SIGHUP) {
        if (serving) {
          weft::log().info("SIGHUP: reloading {}", path);
          (void)c.reload();
        }
        continue;
      }
      if (start_failed) return;  // woken by the failed start below, not by a real signal
      weft::log().info("signal {}: stopping", sig);
      c.request_stop();
      return;
    }
  });
  int rc = 0;
  if (auto st = c.start(std::move(*cfg)); st) {
    serving = true;
    c.wait();
  } else if (c.stop_requested()) {
    weft::log().info("{}", st.error().message);  // a signal during start-up: a clean stop
  } else {
    fmt::print(stderr, "weft controller: {}\n", st.error().message);
    start_failed = true;
    pthread_kill(signals.native_handle(), SIGTERM);  // blocked, so it only ends that thread's sigwait
    rc = 1;
  }
  signals.join();
  c.stop();
  return rc;
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
