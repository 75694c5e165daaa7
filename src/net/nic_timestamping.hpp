#pragma once
// Switching a NIC's hardware timestamping on (SIOCSHWTSTAMP, Documentation/networking/timestamping.rst
// "Hardware Timestamping Implementation"). Sockets already ask for hardware stamps
// (enable_timestamping); a NIC only gives them once it is told to stamp. That setting is global to
// the device and other programs (ptp4l) rely on it, so an existing setting is never narrowed: when
// the NIC already stamps every received packet and every transmit, nothing is changed.
#include <string>

#include "base/result.hpp"

namespace weft::net {

enum class NicStamping {
  already_on,  // the NIC already stamped all receives and transmits: left as it was
  switched_on  // weft switched it on (tx on, rx filter "all")
};

// Needs CAP_NET_ADMIN. Errors say which interface and why (no such interface, the driver has no
// hardware timestamps, permission, or the driver would not stamp every packet).
Result<NicStamping> enable_nic_timestamping(const std::string& interface);

const char* to_string(NicStamping s);

}  // namespace weft::net
