#include "stack/dev/interface_claim.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fstream>

namespace weft::stack {

namespace {

std::string mac_text(const std::array<uint8_t, 6>& m) {
  return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5]);
}

socklen_t claim_address(const std::string& ifname, const std::array<uint8_t, 6>& mac, sockaddr_un& a) {
  a = sockaddr_un{};
  a.sun_family = AF_UNIX;
  // After the leading NUL: an abstract name, e.g. "weft-stack-veth1-02:77:0a:00:00:02".
  const std::string name = "weft-stack-" + ifname + "-" + mac_text(mac);
  std::memcpy(a.sun_path + 1, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

// Who holds the claim: the credentials the kernel recorded when the holder called listen().
std::string holder(const sockaddr_un& a, socklen_t len) {
  const Fd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid() || ::connect(s.get(), reinterpret_cast<const sockaddr*>(&a), len) < 0)
    return "another process";
  ucred cr{};
  socklen_t cl = sizeof cr;
  if (::getsockopt(s.get(), SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0) return "another process";
  std::string comm;
  std::ifstream(fmt::format("/proc/{}/comm", cr.pid)) >> comm;
  return comm.empty() ? fmt::format("pid {}", cr.pid) : fmt::format("pid {}, {}", cr.pid, comm);
}

}  // namespace

Result<Fd> claim_interface(const std::string& ifname, const std::array<uint8_t, 6>& mac) {
  sockaddr_un a;
  if (ifname.size() + 32 > sizeof a.sun_path) return fail("interface name '{}' is too long", ifname);
  const socklen_t len = claim_address(ifname, mac, a);
  Fd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return fail_errno("claim " + ifname + ": socket(AF_UNIX)");
  if (::bind(s.get(), reinterpret_cast<const sockaddr*>(&a), len) < 0) {
    const int e = errno;
    if (e != EADDRINUSE) return fail_errno("claim " + ifname, e);
    return unexpected(
        Error{fmt::format("{} already carries weft's stack with MAC {} in this network namespace "
                          "({}): one stack per address (two would both take its frames and reset "
                          "each other's connections); stop it, or give this program another "
                          "address or interface",
                          ifname, mac_text(mac), holder(a, len)),
              EBUSY});
  }
  if (::listen(s.get(), 16) < 0) return fail_errno("claim " + ifname + ": listen");
  return s;
}

}  // namespace weft::stack
