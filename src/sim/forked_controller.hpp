#pragma once
// A controller in a forked child process, so that `weft bench ingest` and `weft bench fleet` measure
// its CPU time and memory alone (base/proc_stats.hpp on pid()) while the parent plays the agents.
#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>

#include "base/result.hpp"

namespace weft::controller {
class Controller;
}

namespace weft::sim {

// Pins the calling thread, and the threads it starts from then on, to one CPU.
bool pin_to_cpu(int cpu);

class ForkedController {
 public:
  // The child's configuration, given a fresh temp dir (for the SQLite store).
  using ConfigYaml = std::function<std::string(const std::string& dir)>;
  // Runs in the child once the controller is up, before the parent is told it is ready
  // (e.g. registering the simulated agents).
  using Setup = std::function<void(controller::Controller&)>;

  // Forks; the child starts a controller from the YAML and runs until stop(). Fails (naming why on
  // stderr as `what: ...` in the child) when the controller did not start. `what` names the temp dir too.
  // `cpu` >= 0 pins the child (every thread of the controller) to that CPU, so a benchmark can keep
  // it and the simulated agents off each other's core.
  static Result<std::unique_ptr<ForkedController>> start(const std::string& what, const ConfigYaml& yaml,
                                                         const Setup& setup = {}, int cpu = -1);
  ForkedController(const ForkedController&) = delete;
  ForkedController& operator=(const ForkedController&) = delete;
  ~ForkedController() { stop(); }

  pid_t pid() const { return pid_; }
  // SIGTERM to the child, waits for it and removes the temp dir; idempotent.
  void stop();

 private:
  ForkedController(pid_t pid, std::string dir) : pid_(pid), dir_(std::move(dir)) {}
  pid_t pid_ = -1;
  std::string dir_;
};

}  // namespace weft::sim
