#pragma once
// SIGINT/SIGTERM -> a stop function, for long-running commands. The function runs inside the
// signal handler, so it must be async-signal-safe (an atomic store and an eventfd write are).
namespace weft {

void on_stop_signal(void (*fn)());

}  // namespace weft
