#include "base/signals.hpp"

#include <pthread.h>

#include <csignal>
#include <ctime>

namespace weft {

namespace {
void (*volatile g_stop)() = nullptr;
extern "C" void handle_stop(int) {
  if (auto fn = g_stop) fn();
}
}  // namespace

void on_stop_signal(void (*fn)()) {
  g_stop = fn;
  struct sigaction sa {};
  sa.sa_handler = handle_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

SigpipeBlock::SigpipeBlock() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, &old_);
  was_blocked_ = sigismember(&old_, SIGPIPE) == 1;
}

SigpipeBlock::~SigpipeBlock() {
  if (was_blocked_) return;  // an outer guard (or the thread's owner) handles what is pending
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  // A SIGPIPE raised by a write in this scope is pending on this thread: take it before unblocking,
  // or it would be delivered (and kill the process) the moment the old mask is back.
  const timespec now{};
  while (sigtimedwait(&set, nullptr, &now) == SIGPIPE) {
  }
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

}  // namespace weft
