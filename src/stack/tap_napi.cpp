#include "stack/tap_napi.hpp"

#include <linux/ethtool.h>
#include <linux/if.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace weft::stack {

Status tap_threaded_napi(const std::string& ifname) {
  {
    std::ofstream f("/sys/class/net/" + ifname + "/threaded");
    if (!(f << "1\n" << std::flush)) return fail("tap: could not turn threaded NAPI on for {}", ifname);
  }
  const int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return fail_errno("socket");
  ethtool_value v{ETHTOOL_SGRO, 0};
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  ifr.ifr_data = reinterpret_cast<char*>(&v);
  const int r = ioctl(s, SIOCETHTOOL, &ifr);
  const int e = errno;
  close(s);
  if (r < 0) return fail_errno("tap: GRO off on " + ifname, e);
  return {};
}

std::optional<double> napi_thread_cpu_s(const std::string& ifname) {
  // Kernel threads are named "napi/<dev>-<napi id>", cut to 15 characters.
  const std::string prefix = ("napi/" + ifname + "-").substr(0, 15);
  const long hz = sysconf(_SC_CLK_TCK);
  std::optional<double> total;
  std::error_code ec;
  for (const auto& ent : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = ent.path().filename();
    if (pid.empty() || pid[0] < '0' || pid[0] > '9') continue;
    std::ifstream comm(ent.path() / "comm");
    std::string name;
    if (!std::getline(comm, name) || name.compare(0, prefix.size(), prefix) != 0) continue;
    // /proc/PID/stat: "pid (comm) state ..." ; utime and stime are fields 14 and 15.
    std::ifstream st(ent.path() / "stat");
    std::string line;
    if (!std::getline(st, line)) continue;
    const size_t close_paren = line.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream rest(line.substr(close_paren + 2));
    std::string field;
    unsigned long long ut = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) ut = std::stoull(field);
      if (i == 15) stime = std::stoull(field);
    }
    total = total.value_or(0) + static_cast<double>(ut + stime) / static_cast<double>(hz);
  }
  return total;
}

}  // namespace weft::stack
