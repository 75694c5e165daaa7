#pragma once
// Threaded NAPI for a TAP (IFF_NAPI): the kernel's receive work for the frames the stack writes
// (IP, the receiver's TCP, waking the reader) then runs in a kernel thread, "napi/<tap>-<id>",
// which the scheduler may put on another core, instead of inline in the stack's write. Like a NIC
// whose interrupts go to another core. GRO is turned off on the TAP, so the receiver sees the
// segments the stack sent (with offloads off the kernel's own path has no GRO either).
// The thread's CPU time is the stack's cost too: napi_thread_cpu_s() reads it for the figures.
//
// The hand-off to the thread costs a wake-up per burst: a lone request's answer waits for the
// thread to be scheduled (bench/stack_latency.sh, 64 B: 1.31-1.35x the kernel's median round trip
// with the thread, 0.98x without). NapiSwitch turns the thread on and off at run time through
// /sys/class/net/IF/threaded, so the thread can serve bulk transfers only (TapDevice's bulk rule).
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/fd.hpp"
#include "base/result.hpp"

namespace weft::stack {

// For a TAP opened with IFF_NAPI, still in this process's network namespace: GRO off (the
// SIOCETHTOOL ioctl `ethtool -K IF gro off` uses).
Status tap_gro_off(const std::string& ifname);

// For a TAP opened with IFF_NAPI, still in this process's network namespace: threaded NAPI on
// (/sys/class/net/IF/threaded) and GRO off.
Status tap_threaded_napi(const std::string& ifname);

// User + system seconds of the NAPI threads of `ifname` (matched by name, in any namespace);
// nullopt when there is none.
std::optional<double> napi_thread_cpu_s(const std::string& ifname);

// The NAPI thread of a TAP switched on and off while the TAP lives. The sysfs file is opened while
// the TAP is in this namespace and stays valid when the TAP moves to another one. The kernel
// stops the thread when threaded NAPI goes off (and starts a new one when it comes back), so the
// CPU time of each thread is read just before it goes and kept.
class NapiSwitch {
 public:
  static Result<NapiSwitch> open(const std::string& ifname);
  NapiSwitch(NapiSwitch&& o) noexcept = default;
  NapiSwitch& operator=(NapiSwitch&& o) noexcept = default;

  Status set(bool threaded);
  bool threaded() const { return threaded_; }
  // CPU seconds of the threads so far: the ones stopped and the one running.
  double cpu_s() const;

 private:
  NapiSwitch(Fd fd, std::string ifname) : fd_(std::move(fd)), ifname_(std::move(ifname)) {}
  Fd fd_;
  std::string ifname_;
  bool threaded_ = false;
  std::vector<pid_t> pids_;  // the running threads (found when they start)
  double stopped_cpu_s_ = 0;
};

}  // namespace weft::stack
