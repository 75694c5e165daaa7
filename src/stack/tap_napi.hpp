#pragma once
// Threaded NAPI for a TAP (IFF_NAPI): the kernel's receive work for the frames the stack writes
// (IP, the receiver's TCP, waking the reader) then runs in a kernel thread, "napi/<tap>-<id>",
// which the scheduler may put on another core, instead of inline in the stack's write. Like a NIC
// whose interrupts go to another core. GRO is turned off on the TAP, so the receiver sees the
// segments the stack sent (with offloads off the kernel's own path has no GRO either).
// The thread's CPU time is the stack's cost too: napi_thread_cpu_s() reads it for the figures.
#include <optional>
#include <string>

#include "base/result.hpp"

namespace weft::stack {

// For a TAP opened with IFF_NAPI, still in this process's network namespace: threaded NAPI on
// (/sys/class/net/IF/threaded) and GRO off (the SIOCETHTOOL ioctl `ethtool -K IF gro off` uses).
Status tap_threaded_napi(const std::string& ifname);

// User + system seconds of the NAPI threads of `ifname` (matched by name, in any namespace);
// nullopt when there is none.
std::optional<double> napi_thread_cpu_s(const std::string& ifname);

}  // namespace weft::stack
