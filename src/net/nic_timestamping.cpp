#include "net/nic_timestamping.hpp"

#include <linux/net_tstamp.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/fd.hpp"

namespace weft::net {

namespace {

std::unexpected<Error> nic_error(const std::string& interface, const char* what, int err) {
  switch (err) {
    case ENODEV:
      return fail("{}: no such network interface", interface);
    case EOPNOTSUPP:
    case EINVAL:
      return fail("{}: the driver has no hardware timestamps ({}: {})", interface, what, std::strerror(err));
    case EPERM:
    case EACCES:
      return fail("{}: switching hardware timestamps on needs CAP_NET_ADMIN (root)", interface);
    default:
      return fail_errno(interface + ": " + what, err);
  }
}

bool stamps_everything(const hwtstamp_config& c) {
  return c.tx_type == HWTSTAMP_TX_ON && c.rx_filter == HWTSTAMP_FILTER_ALL;
}

}  // namespace

const char* to_string(NicStamping s) { return s == NicStamping::already_on ? "already on" : "switched on"; }

Result<NicStamping> enable_nic_timestamping(const std::string& interface) {
  if (interface.empty() || interface.size() >= IFNAMSIZ)
    return fail("'{}' is not a network interface name", interface);
  Fd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fail_errno("socket");
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, interface.data(), interface.size());
  hwtstamp_config cfg{};
  ifr.ifr_data = reinterpret_cast<char*>(&cfg);
  // The current setting first: most drivers answer SIOCGHWTSTAMP; one that already stamps
  // everything is left alone.
  if (::ioctl(fd.get(), SIOCGHWTSTAMP, &ifr) == 0 && stamps_everything(cfg)) return NicStamping::already_on;
  if (errno == ENODEV) return nic_error(interface, "SIOCGHWTSTAMP", ENODEV);
  cfg = {};
  cfg.tx_type = HWTSTAMP_TX_ON;
  cfg.rx_filter = HWTSTAMP_FILTER_ALL;
  ifr.ifr_data = reinterpret_cast<char*>(&cfg);
  if (::ioctl(fd.get(), SIOCSHWTSTAMP, &ifr) != 0) return nic_error(interface, "SIOCSHWTSTAMP", errno);
  // The driver writes back what it really did; some stamp only PTP packets.
  if (!stamps_everything(cfg))
    return fail(
        "{}: the driver would not stamp every packet (tx type {}, rx filter {}); probes keep kernel "
        "software times",
        interface, cfg.tx_type, cfg.rx_filter);
  return NicStamping::switched_on;
}

}  // namespace weft::net
