#pragma once
// SIGINT/SIGTERM -> a stop function, for long-running commands. The function runs inside the
// signal handler, so it must be async-signal-safe (an atomic store and an eventfd write are).
#include <csignal>

namespace weft {

void on_stop_signal(void (*fn)());

// Blocks SIGPIPE in the calling thread while it lives, and discards a SIGPIPE raised meanwhile: a
// write to a connection the peer has closed then fails with EPIPE instead of killing the process.
// For sockets written by code that does not pass MSG_NOSIGNAL: cpp-httplib's client (the agent's
// requests to the controller; issue 14: 1,000 agents whose controller shed connections under load
// died of SIGPIPE, silently). Our own socket code passes MSG_NOSIGNAL and needs no guard.
class SigpipeBlock {
 public:
  SigpipeBlock();
  ~SigpipeBlock();
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t old_;
  bool was_blocked_ = false;
};

}  // namespace weft
