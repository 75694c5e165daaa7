#pragma once
// One stack per interface per network namespace. Two processes running weft's stack on one
// interface both see every frame and both answer for the address, so each resets the other's
// connections (a server on weft and a client started on weft beside it: curl's download ended in
// "Connection reset" or "Couldn't connect"). The claim is a listening abstract UNIX socket named
// after the interface: abstract names belong to the network namespace, and the kernel drops the
// claim when the process that holds it exits, however it exits.
#include <string>

#include "base/fd.hpp"
#include "base/result.hpp"

namespace weft::stack {

// Claims `ifname` for this process. Refused (code EBUSY) while another process holds it; the
// message names that process (pid and command) and why there may be only one.
Result<Fd> claim_interface(const std::string& ifname);

}  // namespace weft::stack
