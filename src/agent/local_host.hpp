#pragma once
// What the agent finds out about its own host when the operator did not say: its name and the
// address peers should probe (the one the kernel routes towards the controller from).
#include <string>

#include "agent/controller_url.hpp"
#include "base/result.hpp"

namespace weft::agent {

std::string host_name();
Result<std::string> route_source_address(const ControllerUrl& u);

}  // namespace weft::agent
