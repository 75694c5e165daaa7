// `weft demo`: the README's main job. A controller with the embedded store and N agents on this
// machine, each agent in its own network namespace when run as root (loopback addresses
// 127.0.0.x otherwise); prints the dashboard/API URL; runs until Ctrl-C/SIGTERM (or --duration)
// and then removes everything it made: agent processes, namespaces, links, the temp directory.
//
// Namespaces follow lab/netns.py: one Linux bridge with no uplink, a veth per host. The bridge gets
// the controller's address (10.78.0.254) so agents reach the controller in the root namespace; no
// traffic leaves the machine.
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "base/log.hpp"
#include "cli/command_registry.hpp"
#include "controller/auth.hpp"
#include "controller/controller.hpp"

namespace {

namespace fs = std::filesystem;

struct Options {
  int agents = 4;
  uint16_t port = 8080;
  double duration_s = 0;  // 0 = until interrupted
  bool no_netns = false;
  std::string listen_host = "127.0.0.1";
};

constexpr const char* kPrefix = "wmsd";  // namespaces wmsd-h1.., links wmsd-br, wmsd-v1..
constexpr const char* kNet = "10.78.0";

// Runs a command without a shell; quiet unless it fails and `check` is set.
bool run(const std::vector<std::string>& argv, bool check = true) {
  std::vector<char*> args;  // built before fork: the child only makes async-signal-safe calls
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    if (!check) dup2(devnull, 2);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok && check) weft::log().error("demo: '{}' failed", fmt::join(argv, " "));
  return ok;
}

std::string ns_name(int i) { return fmt::format("{}-h{}", kPrefix, i); }

void remove_netns(int n) {
  for (int i = 1; i <= n; ++i) {
    run({"ip", "netns", "del", ns_name(i)}, false);
    run({"ip", "link", "del", fmt::format("{}-v{}", kPrefix, i)}, false);
  }
  run({"ip", "link", "del", fmt::format("{}-br", kPrefix)}, false);
}

bool make_netns(int n) {
  remove_netns(std::max(n, 16));  // leftovers of a killed demo
  std::string br = fmt::format("{}-br", kPrefix);
  if (!run({"ip", "link", "add", br, "type", "bridge"}) ||
      !run({"ip", "addr", "add", fmt::format("{}.254/24", kNet), "dev", br}) ||
      !run({"ip", "link", "set", br, "up"}))
    return false;
  for (int i = 1; i <= n; ++i) {
    std::string ns = ns_name(i), v = fmt::format("{}-v{}", kPrefix, i);
    if (!run({"ip", "netns", "add", ns}) ||
        !run({"ip", "link", "add", v, "type", "veth", "peer", "name", "eth0", "netns", ns}) ||
        !run({"ip", "link", "set", v, "master", br}) || !run({"ip", "link", "set", v, "up"}) ||
        !run({"ip", "netns", "exec", ns, "ip", "addr", "add", fmt::format("{}.{}/24", kNet, i), "dev",
              "eth0"}) ||
        !run({"ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up"}) ||
        !run({"ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"}))
      return false;
  }
  return true;
}

pid_t spawn(const std::vector<std::string>& argv, const std::string& log_path) {
  std::vector<char*> args;  // built before fork: the controller's threads may hold malloc's lock
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, nullptr);
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execvp(args[0], args.data());
    _exit(127);
  }
  return pid;
}

void stop_children(std::vector<pid_t>& pids) {
  for (pid_t p : pids) kill(-p, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (pid_t p : pids) {
    int status;
    while (waitpid(p, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(-p, SIGKILL);
        waitpid(p, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  pids.clear();
}

// What one demo run decided before anything started: where, how, with which credentials.
struct DemoPlan {
  bool netns = false;  // each agent in its own namespace (root), else on 127.0.0.x
  bool local = true;   // the API listens on loopback only
  std::string self, dir, secret, read_token;
};

DemoPlan plan_demo(const Options& o) {
  DemoPlan p;
  p.netns = !o.no_netns && geteuid() == 0;
  p.self = fs::read_symlink("/proc/self/exe").string();
  p.dir = (fs::temp_directory_path() / fmt::format("weft-demo-{}", getpid())).string();
  std::mt19937_64 rng(std::random_device{}());
  // Each agent gets its own token, HMAC of its name under this secret (controller/auth.hpp).
  p.secret = fmt::format("demo-{:016x}{:016x}", rng(), rng());
  // The read API is open on loopback (and on the namespaces' bridge, which only this host reaches);
  // a --listen-host beyond loopback gets a read token, printed below.
  p.local = o.listen_host.starts_with("127.") || o.listen_host == "::1";
  if (!p.local) p.read_token = fmt::format("read-{:016x}", rng());
  return p;
}

std::string demo_config(const Options& o, const DemoPlan& p) {
  std::vector<std::string> listen{fmt::format("{}:{}", o.listen_host, o.port)};
  if (p.netns) listen.push_back(fmt::format("{}.254:{}", kNet, o.port));
  // Plain HTTP: the demo's own namespaces' bridge is not loopback, and a --listen-host beyond it is
  // the user's choice for a demo (the controller still warns).
  const bool plain_beyond_loopback = p.netns || !p.local;
  return fmt::format(
      "listen: [{}]\n{}agent_secret: {}\n{}store: sqlite:{}/history.db\nretention: 1d\nwindow: "
      "5s\nagent_down_after: 10s\n"
      "report_interval: 1s\npinglist_sync: 5s\nprotocols:\n  udp: {{interval: 100ms, timeout: 1s}}\n"
      "  tcp: {{interval: 200ms, timeout: 1s}}\ngroups:\n  - name: demo\n    protocols: [udp, tcp]\n"
      "    members: ['host*']\n",
      fmt::join(listen, ", "), plain_beyond_loopback ? "plain_http: true\n" : "", p.secret,
      p.local ? std::string("open_read: true\n") : fmt::format("read_tokens: [{}]\n", p.read_token), p.dir);
}

// One `weft agent` per host, in its namespace or on its loopback address, logging to the temp dir.
std::vector<pid_t> start_agents(const Options& o, const DemoPlan& p) {
  std::vector<pid_t> children;
  for (int i = 1; i <= o.agents; ++i) {
    std::vector<std::string> argv;
    std::string ctl_url;
    if (p.netns) {
      argv = {"ip", "netns", "exec", ns_name(i)};
      ctl_url = fmt::format("http://{}.254:{}", kNet, o.port);
    } else {
      ctl_url = fmt::format("http://127.0.0.1:{}", o.port);
    }
    const std::string name = fmt::format("host{}", i);
    argv.insert(argv.end(), {p.self, "--log-level", "info", "agent", "--controller", ctl_url, "--token",
                             weft::controller::agent_token(p.secret, name), "--name", name, "--spool-dir",
                             fmt::format("{}/spool-host{}", p.dir, i)});
    if (!p.netns) argv.insert(argv.end(), {"--address", fmt::format("127.0.0.{}", 10 + i)});
    children.push_back(spawn(argv, fmt::format("{}/agent-host{}.log", p.dir, i)));
  }
  return children;
}

void print_banner(const Options& o, const DemoPlan& p) {
  std::string host = o.listen_host == "0.0.0.0" ? "127.0.0.1" : o.listen_host;
  fmt::print("weft demo: controller + {} agents ({})\n", o.agents,
             p.netns ? fmt::format("each in a network namespace {}-h1..h{}", kPrefix, o.agents)
                     : std::string("on loopback addresses 127.0.0.11.."));
  fmt::print("  dashboard  http://{}:{}/\n", host, o.port);
  fmt::print("  API        http://{}:{}/api/v1/mesh?protocol=udp   (also /api/v1/agents, /metrics)\n", host,
             o.port);
  if (!p.read_token.empty())
    fmt::print("  read token {}   (Authorization: Bearer, or any user name with it as password)\n",
               p.read_token);
  fmt::print("  logs       {}\n", p.dir);
  fmt::print("Press Ctrl-C to stop; everything the demo made is removed.\n");
  std::fflush(stdout);
}

// Until Ctrl-C, SIGTERM or SIGHUP (blocked in every thread, so they wait here), or --duration.
void wait_for_stop(const Options& o, const sigset_t& set) {
  if (o.duration_s > 0) {
    timespec ts{static_cast<time_t>(o.duration_s),
                static_cast<long>((o.duration_s - static_cast<time_t>(o.duration_s)) * 1e9)};
    sigtimedwait(&set, nullptr, &ts);
  } else {
    int sig;
    sigwait(&set, &sig);
  }
}

int run_demo(const Options& o) {
  if (o.agents < 2 || o.agents > 50) {
    fmt::print(stderr, "weft demo: --agents must be 2..50\n");
    return 2;
  }
  const DemoPlan p = plan_demo(o);
  fs::create_directories(p.dir);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  int rc = 0;
  {
    if (p.netns && !make_netns(o.agents)) {
      remove_netns(o.agents);
      fs::remove_all(p.dir);
      fmt::print(stderr, "weft demo: could not create the network namespaces (try --no-netns)\n");
      return 1;
    }
    const std::string cfg_path = p.dir + "/weft.yaml";
    std::ofstream(cfg_path) << demo_config(o, p);
    auto cfg = weft::controller::load_config(cfg_path);
    weft::controller::Controller controller;
    std::vector<pid_t> children;
    if (!cfg) {
      fmt::print(stderr, "weft demo: {}\n", cfg.error().message);
      rc = 1;
    } else if (auto st = controller.start(*cfg); !st) {
      fmt::print(stderr, "weft demo: {} (is port {} free? use --port)\n", st.error().message, o.port);
      rc = 1;
    } else {
      children = start_agents(o, p);
      print_banner(o, p);
      wait_for_stop(o, set);
      fmt::print("weft demo: stopping\n");
    }
    stop_children(children);
    controller.stop();
  }
  if (p.netns) remove_netns(o.agents);
  std::error_code ec;
  fs::remove_all(p.dir, ec);
  fmt::print("weft demo: cleaned up\n");
  return rc;
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto* sub = root.app.add_subcommand("demo", "Controller + N agents on this machine, with the dashboard");
  auto o = std::make_shared<Options>();
  sub->add_option("--agents,-n", o->agents, "Number of agents")->capture_default_str();
  sub->add_option("--port", o->port, "Dashboard/API port")->capture_default_str();
  sub->add_option("--listen-host", o->listen_host, "Dashboard/API address")->capture_default_str();
  sub->add_option("--duration", o->duration_s, "Stop after this many seconds (0: run until Ctrl-C)");
  sub->add_flag("--no-netns", o->no_netns, "Use loopback addresses even when root");
  sub->callback([o] { weft::cli::set_exit_code(run_demo(*o)); });
}};

}  // namespace
