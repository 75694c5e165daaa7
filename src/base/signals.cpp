#include "base/signals.hpp"

#include <csignal>

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

}  // namespace weft
