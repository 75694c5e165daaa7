#include "stack/dev/tap_napi.hpp"

#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/if.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "base/fd.hpp"
#include "base/proc_stats.hpp"

namespace weft::stack {

namespace {

// Kernel threads are named "napi/<dev>-<napi id>", cut to 15 characters.
std::vector<pid_t> napi_thread_pids(const std::string& ifname) {
  const std::string prefix = ("napi/" + ifname + "-").substr(0, 15);
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& ent : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = ent.path().filename();
    if (pid.empty() || pid[0] < '0' || pid[0] > '9') continue;
    std::ifstream comm(ent.path() / "comm");
    std::string name;
    if (std::getline(comm, name) && name.compare(0, prefix.size(), prefix) == 0)
      pids.push_back(std::stoi(pid));
  }
  return pids;
}

// User + system seconds of one NAPI thread (a kernel thread is a process of its own: its CPU
// clock, as for any process); nullopt when it is gone.
std::optional<double> thread_cpu_s(pid_t pid) {
  const ProcStats ps = read_proc_stats(pid);
  if (!ps.ok) return std::nullopt;
  return static_cast<double>(ps.cpu_ns) / 1e9;
}

}  // namespace

Status tap_gro_off(const std::string& ifname) {
  const Fd s(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return fail_errno("socket");
  ethtool_value v{ETHTOOL_SGRO, 0};
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  ifr.ifr_data = reinterpret_cast<char*>(&v);
  if (ioctl(s.get(), SIOCETHTOOL, &ifr) < 0) return fail_errno("tap: GRO off on " + ifname);
  return {};
}

Status tap_threaded_napi(const std::string& ifname) {
  {
    std::ofstream f("/sys/class/net/" + ifname + "/threaded");
    if (!(f << "1\n" << std::flush)) return fail("tap: could not turn threaded NAPI on for {}", ifname);
  }
  return tap_gro_off(ifname);
}

std::optional<double> napi_thread_cpu_s(const std::string& ifname) {
  std::optional<double> total;
  for (const pid_t p : napi_thread_pids(ifname))
    if (const auto s = thread_cpu_s(p)) total = total.value_or(0) + *s;
  return total;
}

Result<NapiSwitch> NapiSwitch::open(const std::string& ifname) {
  const std::string path = "/sys/class/net/" + ifname + "/threaded";
  Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return fail_errno("open " + path);
  // Writing the current state proves the file takes writes (a read-only /sys opens, then refuses).
  if (pwrite(fd.get(), "0", 1, 0) != 1) return fail_errno("write " + path);
  return NapiSwitch(std::move(fd), ifname);
}

Status NapiSwitch::set(bool threaded) {
  if (threaded == threaded_) return {};
  // The thread's time before it stops (it would be lost with it).
  if (!threaded) stopped_cpu_s_ = cpu_s();
  if (pwrite(fd_.get(), threaded ? "1" : "0", 1, 0) != 1)
    return fail_errno("tap: threaded NAPI for " + ifname_);
  threaded_ = threaded;
  // The kernel starts the thread inside the write: its pid is there now. Names are matched in any
  // namespace, so a TAP of the same name elsewhere would be counted too (as napi_thread_cpu_s does).
  pids_ = threaded ? napi_thread_pids(ifname_) : std::vector<pid_t>{};
  return {};
}

double NapiSwitch::cpu_s() const {
  double t = stopped_cpu_s_;
  for (const pid_t p : pids_) t += thread_cpu_s(p).value_or(0);
  return t;
}

}  // namespace weft::stack
