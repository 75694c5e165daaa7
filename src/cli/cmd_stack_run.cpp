// `weft stack run [device options] -- PROGRAM ARGS...`: runs an unmodified program on weft's
// user-space stack. weft checks the options and opens the device once (so a device that cannot be
// opened stops here, with the reason, before the program starts), closes it, then execs the
// program with LD_PRELOAD=libweft_preload.so (src/posix) and the device, address and routes in
// the environment (posix/env.hpp). The program keeps weft's process id, which the library takes as
// the one process that owns the stack: it opens the device again when it loads and carries the
// program's AF_INET TCP and UDP sockets (loopback, and what the stack does not route, go to the
// kernel). docs/stack.md, "Running a program on weft".
#include <arpa/inet.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cli/command_registry.hpp"
#include "cli/stack_run.hpp"
#include "posix/env.hpp"
#include "stack/dev/packet_device.hpp"
#include "stack/dev/stable_mac.hpp"

namespace {

namespace env = weft::posix::env;

struct RunOptions {
  std::string device = "packet";
  std::string ifname;
  std::string ip;
  std::string gateway;
  uint32_t buffer = 1024 * 1024;
  bool no_tso = false;
  bool no_vnet_hdr = false;
  bool drive_in_waits = false;
  bool verbose = false;
  std::vector<std::string> command;
};

int say(const std::string& msg) {
  fmt::print(stderr, "weft stack run: {}\n", msg);
  return 1;
}

bool valid_ip(const std::string& s, bool with_prefix) {
  const auto slash = s.find('/');
  if (with_prefix != (slash != std::string::npos)) return false;
  in_addr in{};
  if (inet_pton(AF_INET, s.substr(0, slash).c_str(), &in) != 1) return false;
  if (!with_prefix) return true;
  const std::string p = s.substr(slash + 1);
  return !p.empty() && p.size() <= 2 && std::all_of(p.begin(), p.end(), ::isdigit) && std::stoi(p) >= 1 &&
         std::stoi(p) <= 32;
}

// libweft_preload.so: $WEFT_PRELOAD, else beside this executable (the build tree), else the
// installed ../lib/weft/.
std::string find_library() {
  if (const char* p = std::getenv(env::kPreload); p != nullptr && *p != '\0') return p;
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  self[n] = '\0';
  const std::string dir = std::string(self).substr(0, std::string(self).rfind('/'));
  for (const std::string& c : {dir + "/libweft_preload.so", dir + "/../lib/weft/libweft_preload.so"})
    if (::access(c.c_str(), R_OK) == 0) return c;
  return "";
}

int run_program(const RunOptions& o) {
  if (o.command.empty()) return say("no program given (weft stack run [options] -- PROGRAM ARGS...)");
  if (o.device != "packet")
    return say(
        fmt::format("--device {} is not supported here: programs run on an AF_PACKET device (--device packet "
                    "--ifname IF)",
                    o.device));
  if (o.ifname.empty())
    return say("--ifname is required (the interface the stack takes, with no kernel address)");
  if (!valid_ip(o.ip, true)) return say(fmt::format("--ip wants A.B.C.D/P, got '{}'", o.ip));
  if (!o.gateway.empty() && !valid_ip(o.gateway, false))
    return say(fmt::format("--gateway wants A.B.C.D, got '{}'", o.gateway));
  const std::string lib = find_library();
  if (lib.empty())
    return say(
        "libweft_preload.so not found beside weft nor in ../lib/weft (build the weft_preload target, or set "
        "WEFT_PRELOAD)");
  {
    // The device must open here, where the reason can still be told, not inside the program.
    weft::stack::PacketDevice::Options po;
    po.ifname = o.ifname;
    po.tx_csum_offload = !o.no_vnet_hdr;
    in_addr a{};
    (void)inet_pton(AF_INET, o.ip.substr(0, o.ip.find('/')).c_str(), &a);
    po.mac = weft::stack::stable_mac(ntohl(a.s_addr));  // the program's: its claim is checked here
    auto d = weft::stack::PacketDevice::open(po);
    if (!d) {
      const int e = d.error().code;
      std::string hint;
      if (e == EPERM || e == EACCES)
        hint = " (AF_PACKET needs root or CAP_NET_RAW)";
      else if (e == ENODEV || d.error().message.find("No such device") != std::string::npos)
        hint = fmt::format(
            " (no interface {} in this network namespace: see `ip link`, or run weft inside the "
            "interface's namespace with `ip netns exec NS`)",
            o.ifname);
      return say(fmt::format("cannot open {} for the stack: {}{}; the program was not started", o.ifname,
                             d.error().message, hint));
    }
  }
  std::string preload = lib;
  if (const char* old = std::getenv("LD_PRELOAD"); old != nullptr && *old != '\0')
    preload += std::string(":") + old;
  ::setenv("LD_PRELOAD", preload.c_str(), 1);
  ::setenv(env::kDevice, o.device.c_str(), 1);
  ::setenv(env::kIfname, o.ifname.c_str(), 1);
  ::setenv(env::kIp, o.ip.c_str(), 1);
  if (!o.gateway.empty())
    ::setenv(env::kGateway, o.gateway.c_str(), 1);
  else
    ::unsetenv(env::kGateway);
  ::setenv(env::kBuffer, std::to_string(o.buffer).c_str(), 1);
  ::setenv(env::kNoTso, o.no_tso ? "1" : "0", 1);
  ::setenv(env::kNoVnetHdr, o.no_vnet_hdr ? "1" : "0", 1);
  ::setenv(env::kVerbose, o.verbose ? "1" : "0", 1);
  ::setenv(env::kDriveInWaits, o.drive_in_waits ? "1" : "0", 1);
  ::setenv(env::kOwner, std::to_string(::getpid()).c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  say(fmt::format("cannot run {}: {}", o.command[0], std::strerror(errno)));
  return 127;
}

}  // namespace

namespace weft::cli {

void add_stack_run(CLI::App* stack) {
  auto opts = std::make_shared<RunOptions>();  // owned by the registration (docs/code.md)
  RunOptions& o = *opts;
  auto* run = stack->add_subcommand("run",
                                    "run an unmodified program on the stack (LD_PRELOAD): weft stack run "
                                    "--ifname IF --ip A.B.C.D/P -- PROG ARGS");
  run->add_option("--device", o.device, "the device: packet (AF_PACKET on --ifname)")->capture_default_str();
  run->add_option("--ifname", o.ifname, "the interface the stack takes (no kernel address on it)");
  run->add_option("--ip", o.ip, "the stack's address, A.B.C.D/P")->required();
  run->add_option("--gateway", o.gateway, "next hop for addresses off the subnet");
  run->add_option("--buffer", o.buffer, "each connection's send and receive ring, bytes")
      ->capture_default_str()
      ->check(CLI::Range(4096u, 1u << 30));
  run->add_flag("--no-tso", o.no_tso, "one MSS per frame (no super-frames to the kernel's GSO)");
  run->add_flag("--no-vnet-hdr", o.no_vnet_hdr, "the stack computes every checksum");
  run->add_flag("--drive-in-waits", o.drive_in_waits,
                "a thread blocked in poll/select or a blocking call runs the stack itself (run to "
                "completion for programs without epoll; costs bulk throughput on 2 cores)");
  run->add_flag("--verbose", o.verbose, "a log line for each address the kernel carries instead");
  run->add_option("command", o.command, "the program and its arguments (after --)")->required();
  run->callback([opts] { set_exit_code(run_program(*opts)); });
}

}  // namespace weft::cli
