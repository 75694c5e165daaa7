#include "sim/forked_controller.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "controller/config.hpp"
#include "controller/controller.hpp"

namespace weft::sim {

bool pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

namespace {

// The child: SIGTERM is blocked before anything starts so that it is only ever taken by sigwait,
// and the controller stops cleanly (its store flushed) instead of dying mid-write.
[[noreturn]] void child_main(const std::string& what, const std::string& yaml,
                             const ForkedController::Setup& setup, int cpu, int ready_fd) {
  char ok = 0;
  if (cpu >= 0 && !pin_to_cpu(cpu)) {
    fmt::print(stderr, "{}: cannot pin the controller to CPU {}\n", what, cpu);
    (void)!write(ready_fd, &ok, 1);
    _exit(1);
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  auto cfg = controller::parse_config(yaml, "<" + what + ">");
  if (!cfg) {
    fmt::print(stderr, "{}: {}\n", what, cfg.error().message);
    (void)!write(ready_fd, &ok, 1);
    _exit(1);
  }
  controller::Controller c;
  if (auto st = c.start(*cfg); !st) {
    fmt::print(stderr, "{}: controller: {}\n", what, st.error().message);
    (void)!write(ready_fd, &ok, 1);
    _exit(1);
  }
  if (setup) setup(c);
  ok = 1;
  (void)!write(ready_fd, &ok, 1);
  int sig = 0;
  sigwait(&set, &sig);
  c.stop();
  _exit(0);
}

}  // namespace

Result<std::unique_ptr<ForkedController>> ForkedController::start(const std::string& what,
                                                                  const ConfigYaml& yaml, const Setup& setup,
                                                                  int cpu) {
  std::string name = what;
  std::replace(name.begin(), name.end(), ' ', '-');
  std::string dir =
      (std::filesystem::temp_directory_path() / fmt::format("wms-{}-{}", name, getpid())).string();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail("{}: cannot create {}: {}", what, dir, ec.message());
  std::string config = yaml(dir);
  int fds[2];
  if (pipe(fds) != 0) return fail("{}: pipe failed", what);
  pid_t child = fork();
  if (child < 0) {
    close(fds[0]);
    close(fds[1]);
    return fail("{}: fork failed", what);
  }
  if (child == 0) {
    close(fds[0]);
    child_main(what, config, setup, cpu, fds[1]);
  }
  close(fds[1]);
  std::unique_ptr<ForkedController> bc(new ForkedController(child, dir));
  char ok = 0;
  bool started = read(fds[0], &ok, 1) == 1 && ok;
  close(fds[0]);
  if (!started) return fail("{}: the controller did not start", what);  // bc stops the child
  return bc;
}

void ForkedController::stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace weft::sim
