#pragma once
// One stack per MAC address per interface per network namespace. Two processes running weft's
// stack on one interface with one MAC both take every frame for it and both answer for the
// address, so each resets the other's connections (a server on weft and a client started on weft
// beside it with the same address: curl's download ended in "Connection reset" or "Couldn't
// connect"). Stacks with MACs of their own may share an interface: each takes only its frames.
// The claim is a listening abstract UNIX socket named after the interface and the MAC: abstract
// names belong to the network namespace, and the kernel drops the claim when the process that
// holds it exits, however it exits.
#include <array>
#include <cstdint>
#include <string>

#include "base/fd.hpp"
#include "base/result.hpp"

namespace weft::stack {

// Claims `mac` on `ifname` for this process. Refused (code EBUSY) while another process holds it;
// the message names that process (pid and command) and why there may be only one.
Result<Fd> claim_interface(const std::string& ifname, const std::array<uint8_t, 6>& mac);

}  // namespace weft::stack
