// `weft bench fleet --agents 10000 --targets 100 --seconds 40 --json`: one controller holding a
// fleet. Every simulated agent keeps one HTTP connection open, as real agents do, registers, fetches
// its pinglist, then reports every second (health only, and once per 10 s window its windows for
// `targets` peers) and re-checks its pinglist every 10 s. Meanwhile an API client measures how fast
// /healthz, a rack's mesh and a registration answer. Printed: whether every agent registered, the
// latency percentiles of each kind of request, the controller's CPU and RSS (and RSS per agent).
//
// The controller runs in a forked child (its CPU and memory are measured alone). The agents are one
// epoll thread in this process, each connection bound to its own source address in 127.1.0.0/16
// (200 agents per address) as a fleet's agents come from their own hosts: the controller's
// per-address limit applies as it would. Agent a is in rack a / 100 (group rack-NNN, 99 pinglist
// targets); its reports carry windows for `targets` peers, the next ones by number. With --tls the
// controller serves HTTPS (a throw-away self-signed certificate) and every connection does one TLS
// handshake when it opens, then stays open (bench_tls.hpp).
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/proc_stats.hpp"
#include "cli/bench_common.hpp"
#include "cli/bench_controller.hpp"
#include "cli/bench_http_client.hpp"
#include "cli/bench_sample.hpp"
#include "cli/bench_tls.hpp"
#include "cli/command_registry.hpp"
#include "net/socket.hpp"
#include "proto/report.hpp"

namespace {

struct Options {
  size_t agents = 10000;
  size_t targets = 100;
  double seconds = 40;
  size_t agents_per_address = 200;
  uint16_t port = 18099;
  int controller_cpu = -1;  // >= 0: pin the controller child to this CPU
  int sim_cpu = -1;         // >= 0: pin the simulated agents and the API client to this CPU
  int controller_nice = 0;  // the controller child's nice value (negative: ahead of other work)
  bool json = false;
  bool tls = false;  // HTTPS on every connection
};

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kReportNs = kSecond;  // every agent reports every second
constexpr int64_t kWindowNs = 10 * kSecond;

int64_t unix_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
int64_t mono_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string agent_name(size_t a) { return fmt::format("agent-{:05d}", a); }
std::string agent_ip(size_t a, size_t per) {
  return fmt::format("127.1.{}.{}", a / per / 250, a / per % 250 + 1);
}

enum Kind : uint8_t {
  kRegister,
  kPinglist,
  kReport,
  kReportWindows,
  kApiHealthz,
  kApiMesh,
  kApiRegister,
  kKinds
};
constexpr const char* kKindNames[kKinds] = {"register",       "pinglist",    "report_health_only",
                                            "report_windows", "api_healthz", "api_mesh_rack",
                                            "api_register"};

struct Latencies {
  std::vector<int64_t> ns[kKinds];
  size_t errors[kKinds] = {};
  std::string first_error;
  void add(Kind k, int64_t v) { ns[k].push_back(v); }
};

double pct_ms(const std::vector<int64_t>& v, double p) { return weft::cli::percentile_ms(v, p); }

// One simulated agent: a kept-open connection with at most one request in flight.
struct Sim {
  int fd = -1;
  SSL* ssl = nullptr;  // --tls
  std::string out, in;
  size_t off = 0;
  int64_t sent_ns = 0;
  Kind kind = kRegister;
  bool busy = false, tick_pending = false, want_pinglist = false;
  int64_t tick_unix_ns = 0;
  bool tick_windows = false, registered = false;
  uint64_t seq = 0, pl_version = 0;
};

class Fleet {
 public:
  Fleet(const Options& o, SSL_CTX* tls) : o_(o), sims_(o.agents), tls_(tls) {}
  ~Fleet() {
    for (auto& s : sims_)
      if (s.ssl) SSL_free(s.ssl);
  }

  weft::Status connect_all() {
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    for (size_t a = 0; a < o_.agents; ++a) {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) return weft::fail("socket: {} (agent {})", std::strerror(errno), a);
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
      sockaddr_in b{}, to{};
      b.sin_family = to.sin_family = AF_INET;
      inet_pton(AF_INET, agent_ip(a, o_.agents_per_address).c_str(), &b.sin_addr);
      to.sin_port = htons(o_.port);
      to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::bind(fd, reinterpret_cast<sockaddr*>(&b), sizeof b) != 0 ||
          ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
        int e = errno;
        ::close(fd);
        return weft::fail("connect agent {}: {}", a, std::strerror(e));
      }
      if (tls_) {  // the handshake while the socket still blocks; the connection then stays open
        SSL* ssl = SSL_new(tls_);
        if (!ssl || SSL_set_fd(ssl, fd) != 1 || SSL_connect(ssl) != 1) {
          ERR_clear_error();
          if (ssl) SSL_free(ssl);
          ::close(fd);
          return weft::fail("TLS handshake of agent {} failed", a);
        }
        sims_[a].ssl = ssl;
      }
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = a;
      epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev);
      sims_[a].fd = fd;
    }
    return {};
  }

  // Registers every agent (and fetches its pinglist); returns the seconds it took.
  double register_all(int64_t timeout_ns) {
    int64_t t0 = mono_ns();
    for (size_t a = 0; a < o_.agents; ++a) send(a, kRegister);
    while ((registered_ < o_.agents || in_flight()) && mono_ns() - t0 < timeout_ns) poll(5);
    return static_cast<double>(mono_ns() - t0) / 1e9;
  }

  // Reports for `seconds`: agent a's n-th report is due at start + n s + a/N s.
  void run(double seconds) {
    int64_t start = mono_ns(), start_unix = unix_ns();
    int64_t end = start + static_cast<int64_t>(seconds * 1e9);
    size_t next_a = 0;
    int64_t next_n = 0;
    auto due = [&] {
      return start + next_n * kReportNs +
             static_cast<int64_t>(next_a) * kReportNs / static_cast<int64_t>(o_.agents);
    };
    while (true) {
      int64_t now = mono_ns();
      if (now >= end) break;
      while (due() <= now && due() < end) {
        Sim& s = sims_[next_a];
        s.tick_unix_ns = start_unix + (due() - start);
        // Once per window, the report after the window ends carries its windows (agents are
        // spread over the 10 s); every 10th report is followed by a pinglist check.
        s.tick_windows = static_cast<size_t>(next_n) % 10 == next_a % 10 && next_n >= 10;
        if (next_n % 10 == 5) s.want_pinglist = true;
        if (s.busy) {
          s.tick_pending = true;
          late_++;
        } else {
          send_report(next_a);
        }
        if (++next_a == o_.agents) {
          next_a = 0;
          ++next_n;
        }
      }
      poll(1);
    }
    // Let the last answers in.
    int64_t drain = mono_ns();
    while (in_flight() && mono_ns() - drain < 5 * kSecond) poll(5);
  }

  Latencies& lat() { return lat_; }
  size_t registered() const { return registered_; }
  size_t late() const { return late_; }
  size_t windows_sent() const { return windows_sent_; }

 private:
  size_t in_flight() const {
    size_t n = 0;
    for (const auto& s : sims_) n += s.busy;
    return n;
  }

  void send_report(size_t a) {
    Sim& s = sims_[a];
    weft::proto::Report r;
    r.agent = agent_name(a);
    r.seq = ++s.seq;
    r.health.cpu_percent = 1.5;
    r.health.rss_kb = 12000;
    r.health.probes_per_s = static_cast<double>(o_.targets) * 10;
    if (s.tick_windows) {
      int64_t wend = s.tick_unix_ns / 1'000'000 * 1'000'000;
      for (size_t t = 0; t < o_.targets; ++t) {
        std::string tgt = agent_name((a + 1 + t) % o_.agents);
        if (tgt == r.agent) continue;
        r.windows.push_back(weft::cli::sample_window(tgt, wend - kWindowNs, a * 31 + t + s.seq));
      }
      windows_sent_ += r.windows.size();
    }
    s.out = weft::cli::build_post_request("/api/v1/report", weft::proto::kBinaryContentType,
                                          weft::proto::encode_binary(r));
    send(a, s.tick_windows ? kReportWindows : kReport, false);
  }

  void send(size_t a, Kind k, bool build = true) {
    Sim& s = sims_[a];
    if (build && k == kRegister) {
      nlohmann::json j{{"name", agent_name(a)},
                       {"addresses", {agent_ip(a, o_.agents_per_address)}},
                       {"protocols", {"udp"}},
                       {"udp_port", 7777},
                       {"version", "bench-fleet"}};
      s.out = weft::cli::build_post_request("/api/v1/register", "application/json", j.dump());
    } else if (build && k == kPinglist) {
      s.out = fmt::format("GET /api/v1/pinglist?agent={}&version={} HTTP/1.1\r\nHost: bench\r\n\r\n",
                          agent_name(a), s.pl_version);
    }
    s.kind = k;
    s.busy = true;
    s.off = 0;
    s.sent_ns = mono_ns();
    flush(a);
  }

  void flush(size_t a) {
    Sim& s = sims_[a];
    while (s.off < s.out.size()) {
      if (s.ssl) {  // the same bytes again after a WANT_* (s.off moves only on success)
        int w = SSL_write(s.ssl, s.out.data() + s.off, static_cast<int>(s.out.size() - s.off));
        if (w > 0) {
          s.off += static_cast<size_t>(w);
          continue;
        }
        int e = SSL_get_error(s.ssl, w);
        ERR_clear_error();
        if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
          set_out(a, true);
          return;
        }
        return fail_sim(a, "TLS write failed");
      }
      ssize_t w = ::send(s.fd, s.out.data() + s.off, s.out.size() - s.off, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        set_out(a, true);
        return;
      }
      if (w <= 0) return fail_sim(a, fmt::format("send: {}", std::strerror(errno)));
      s.off += static_cast<size_t>(w);
    }
    set_out(a, false);
  }
  void set_out(size_t a, bool on) {
    epoll_event ev{};
    ev.events = EPOLLIN | (on ? EPOLLOUT : 0u);
    ev.data.u64 = a;
    epoll_ctl(ep_, EPOLL_CTL_MOD, sims_[a].fd, &ev);
  }
  void fail_sim(size_t a, std::string why) {
    Sim& s = sims_[a];
    lat_.errors[s.kind]++;
    if (lat_.first_error.empty()) lat_.first_error = fmt::format("{}: {}", agent_name(a), why);
    s.busy = false;
    epoll_ctl(ep_, EPOLL_CTL_DEL, s.fd, nullptr);
  }

  void poll(int timeout_ms) {
    epoll_event evs[512];
    int n = epoll_wait(ep_, evs, 512, timeout_ms);
    for (int i = 0; i < n; ++i) {
      size_t a = evs[i].data.u64;
      if (evs[i].events & EPOLLOUT) flush(a);
      if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) readable(a);
    }
  }

  void readable(size_t a) {
    Sim& s = sims_[a];
    char buf[16384];
    if (s.ssl) {  // every record that is here (SSL_read returns one at a time)
      while (true) {
        int got = SSL_read(s.ssl, buf, sizeof buf);
        if (got > 0) {
          s.in.append(buf, static_cast<size_t>(got));
          continue;
        }
        int e = SSL_get_error(s.ssl, got);
        ERR_clear_error();
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break;
        return fail_sim(a, "TLS read failed or the controller closed the connection");
      }
    } else {
      ssize_t got = ::recv(s.fd, buf, sizeof buf, 0);
      if (got == 0) return fail_sim(a, "the controller closed the connection");
      if (got < 0) {
        if (errno == EAGAIN || errno == EINTR) return;
        return fail_sim(a, fmt::format("recv: {}", std::strerror(errno)));
      }
      s.in.append(buf, static_cast<size_t>(got));
    }
    auto end = s.in.find("\r\n\r\n");
    if (end == std::string::npos) return;
    auto cl = s.in.find("Content-Length: ");
    size_t len = cl != std::string::npos && cl < end ? std::stoul(s.in.substr(cl + 16)) : 0;
    if (s.in.size() < end + 4 + len) return;
    int status = std::atoi(s.in.c_str() + 9);
    std::string body = s.in.substr(end + 4, len);
    s.in.erase(0, end + 4 + len);
    lat_.add(s.kind, mono_ns() - s.sent_ns);
    s.busy = false;
    if (status != 200) {
      lat_.errors[s.kind]++;
      if (lat_.first_error.empty())
        lat_.first_error = fmt::format("{}: HTTP {}: {}", agent_name(a), status, body);
    }
    if (s.kind == kRegister && status == 200) {
      if (!s.registered) ++registered_;
      s.registered = true;
      return send(a, kPinglist);  // as agents do right after registering
    }
    if (s.kind == kPinglist) {
      auto j = nlohmann::json::parse(body, nullptr, false);
      if (j.is_object() && j.contains("version")) s.pl_version = j["version"].get<uint64_t>();
    }
    if (s.want_pinglist && s.kind != kPinglist) {
      s.want_pinglist = false;
      return send(a, kPinglist);
    }
    if (s.kind == kPinglist) s.want_pinglist = false;
    if (s.tick_pending) {
      s.tick_pending = false;
      send_report(a);
    }
  }

  const Options& o_;
  std::vector<Sim> sims_;
  SSL_CTX* tls_ = nullptr;
  int ep_ = -1;
  Latencies lat_;
  size_t registered_ = 0, late_ = 0, windows_sent_ = 0;
};

// The API client: /healthz, one rack's mesh, a registration, round robin, on kept-open connections
// from 127.0.0.1, until `stop`.
void api_client(const Options& o, SSL_CTX* tls, std::atomic<bool>& stop, Latencies& lat) {
  weft::cli::BenchHttpConnection c;
  if (!c.connect_loopback(o.port, tls)) return;
  size_t racks = (o.agents + 99) / 100;
  for (size_t i = 0; !stop.load(); ++i) {
    Kind k = static_cast<Kind>(kApiHealthz + i % 3);
    std::string req;
    if (k == kApiHealthz) {
      req = "GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n";
    } else if (k == kApiMesh) {
      req = fmt::format(
          "GET /api/v1/mesh?protocol=udp&format=columns&group=rack-{:03d} HTTP/1.1\r\nHost: bench\r\n\r\n",
          i / 3 % racks);
    } else {
      // A new agent joining while the fleet reports.
      nlohmann::json j{{"name", fmt::format("joiner-{:05d}", i / 3)},
                       {"addresses", {"127.0.0.1"}},
                       {"protocols", {"udp"}},
                       {"udp_port", 7777},
                       {"version", "bench-fleet"}};
      req = weft::cli::build_post_request("/api/v1/register", "application/json", j.dump());
    }
    int64_t t0 = mono_ns();
    auto r = c.exchange(req);
    lat.add(k, mono_ns() - t0);
    if (!r || r->status != 200) {
      lat.errors[k]++;
      if (lat.first_error.empty())
        lat.first_error = r ? fmt::format("API HTTP {}", r->status) : r.error().message;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// The controller's own account of where its requests spent their time (/metrics,
// weft_controller_http_request_stage_seconds): per route and stage, the bucket bounds that hold the
// median and the 99th percentile, in ms ("+Inf" above the last bucket).
nlohmann::json server_stages(const std::string& metrics) {
  constexpr std::string_view kFamily = "weft_controller_http_request_stage_seconds_bucket{";
  // (route, stage) -> [(le, cumulative count)]
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<double, double>>> h;
  size_t pos = 0;
  while (pos < metrics.size()) {
    size_t eol = metrics.find('\n', pos);
    if (eol == std::string::npos) eol = metrics.size();
    std::string_view line(metrics.data() + pos, eol - pos);
    pos = eol + 1;
    if (!line.starts_with(kFamily)) continue;
    auto label = [&](std::string_view name) -> std::string {
      size_t at = line.find(fmt::format("{}=\"", name));
      if (at == std::string_view::npos) return {};
      at += name.size() + 2;
      return std::string(line.substr(at, line.find('"', at) - at));
    };
    std::string le = label("le");
    double bound = le == "+Inf" ? std::numeric_limits<double>::infinity() : std::strtod(le.c_str(), nullptr);
    double count = std::strtod(std::string(line.substr(line.rfind(' ') + 1)).c_str(), nullptr);
    h[{label("route"), label("stage")}].emplace_back(bound, count);
  }
  nlohmann::json out = nlohmann::json::object();
  for (auto& [key, buckets] : h) {
    std::sort(buckets.begin(), buckets.end());
    double total = buckets.empty() ? 0 : buckets.back().second;
    auto at = [&](double q) -> nlohmann::json {
      for (const auto& [le, c] : buckets)
        if (c >= q * total) return std::isinf(le) ? nlohmann::json("+Inf") : nlohmann::json(le * 1e3);
      return nullptr;
    };
    out[key.first][key.second] = {{"count", total}, {"p50_le_ms", at(0.5)}, {"p99_le_ms", at(0.99)}};
  }
  return out;
}

int run_fleet(const Options& o) {
  using weft::cli::load_average;
  if (o.sim_cpu >= 0 && !weft::cli::pin_to_cpu(o.sim_cpu)) {
    fmt::print(stderr, "bench fleet: cannot pin the simulator to CPU {}\n", o.sim_cpu);
    return 1;
  }
  const double load_start = load_average();
  uint64_t fds = weft::net::raise_fd_limit();
  if (fds < o.agents + 64) {
    fmt::print(stderr, "bench fleet: the descriptor limit ({}) is below {} agents + 64\n", fds, o.agents);
    return 1;
  }
  auto yaml = [&](const std::string& dir) {
    std::string tls;
    if (o.tls) {
      if (auto st = weft::cli::write_bench_certificate(dir); !st)
        fmt::print(stderr, "{}\n", st.error().message);
      tls = fmt::format("tls_cert: {0}/bench-cert.pem\ntls_key: {0}/bench-key.pem\n", dir);
    }
    std::string y =
        tls + fmt::format(
                  "listen: 127.0.0.1:{}\nstore: sqlite:{}/fleet.db\nwindow: 10s\nreport_interval: 1s\n"
                  "agent_down_after: 30s\nhttp_max_connections_per_address: {}\ngroups:\n",
                  o.port, dir, o.agents_per_address + 16);
    for (size_t r = 0; r * 100 < o.agents; ++r)
      y += fmt::format("  - {{name: rack-{:03d}, protocols: [udp], members: ['agent-{:03d}?\?']}}\n", r, r);
    return y;
  };
  auto controller = weft::cli::BenchController::start("bench fleet", yaml, {}, o.controller_cpu);
  if (controller && o.controller_nice != 0) {
    // Every thread of the child: on Linux the nice value is per thread.
    for (const auto& t :
         std::filesystem::directory_iterator(fmt::format("/proc/{}/task", (*controller)->pid())))
      setpriority(PRIO_PROCESS, static_cast<id_t>(std::stoi(t.path().filename().string())),
                  o.controller_nice);
  }
  if (!controller) {
    fmt::print(stderr, "{}\n", controller.error().message);
    return 1;
  }
  pid_t child = (*controller)->pid();
  weft::ProcStats idle = weft::read_proc_stats(child);

  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> tls(
      o.tls ? weft::cli::bench_tls_client_context() : nullptr, SSL_CTX_free);
  if (tls) SSL_CTX_set_mode(tls.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  Fleet fleet(o, tls.get());
  if (auto st = fleet.connect_all(); !st) {
    fmt::print(stderr, "bench fleet: {}\n", st.error().message);
    return 1;
  }
  weft::ProcStats connected = weft::read_proc_stats(child);
  double reg_s = fleet.register_all(120 * kSecond);
  weft::ProcStats before = weft::read_proc_stats(child);
  std::atomic<bool> stop{false};
  Latencies api;
  std::thread api_thread([&] { api_client(o, tls.get(), stop, api); });
  int64_t t0 = mono_ns();
  fleet.run(o.seconds);
  double secs = static_cast<double>(mono_ns() - t0) / 1e9;
  stop = true;
  api_thread.join();
  weft::ProcStats after = weft::read_proc_stats(child);

  // What the controller says it holds.
  size_t up = 0, agents_listed = 0, pairs = 0;
  nlohmann::json stages;
  double metrics_ms = 0, suspects_ms = 0;  // one whole-mesh answer each, computed for the request
  {
    weft::cli::BenchHttpConnection c;
    if (c.connect_loopback(o.port, tls.get())) {
      if (auto r = c.exchange("GET /api/v1/agents HTTP/1.1\r\nHost: bench\r\n\r\n"); r && r->status == 200) {
        auto j = nlohmann::json::parse(r->body, nullptr, false);
        if (j.is_object())
          for (const auto& ag : j["agents"])
            if (ag["name"].get<std::string>().starts_with("agent-")) {
              agents_listed++;
              up += ag["state"] == "up";
            }
      }
      if (auto r = c.exchange("GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n"); r && r->status == 200) {
        auto j = nlohmann::json::parse(r->body, nullptr, false);
        if (j.is_object()) pairs = j.value("pairs", size_t{0});
      }
      int64_t t = mono_ns();
      if (auto r = c.exchange("GET /api/v1/suspects?protocol=udp HTTP/1.1\r\nHost: bench\r\n\r\n");
          r && r->status == 200)
        suspects_ms = static_cast<double>(mono_ns() - t) / 1e6;
      t = mono_ns();
      if (auto r = c.exchange("GET /metrics HTTP/1.1\r\nHost: bench\r\n\r\n"); r && r->status == 200) {
        metrics_ms = static_cast<double>(mono_ns() - t) / 1e6;
        stages = server_stages(r->body);
      }
    }
  }
  (*controller)->stop();

  auto& L = fleet.lat();
  for (int k = kApiHealthz; k < kKinds; ++k) {
    L.ns[k] = std::move(api.ns[k]);
    L.errors[k] = api.errors[k];
  }
  if (L.first_error.empty()) L.first_error = api.first_error;
  nlohmann::json lat = nlohmann::json::object();
  size_t errors = 0;
  for (int k = 0; k < kKinds; ++k) {
    errors += L.errors[k];
    lat[kKindNames[k]] = {{"count", L.ns[k].size()},
                          {"errors", L.errors[k]},
                          {"p50_ms", pct_ms(L.ns[k], 0.5)},
                          {"p99_ms", pct_ms(L.ns[k], 0.99)},
                          {"max_ms", pct_ms(L.ns[k], 1.0)}};
  }
  double cpu_s = static_cast<double>(after.cpu_ns - before.cpu_ns) / 1e9;
  nlohmann::json out{{"agents", o.agents},
                     {"tls", o.tls},
                     {"targets", o.targets},
                     {"seconds", secs},
                     {"registered", fleet.registered()},
                     {"agents_listed", agents_listed},
                     {"agents_up", up},
                     {"register_all_s", reg_s},
                     {"pairs_held", pairs},
                     {"windows_sent", fleet.windows_sent()},
                     {"late_reports", fleet.late()},
                     {"request_errors", errors},
                     {"latency", lat},
                     {"controller_cpu_percent", cpu_s / secs * 100.0},
                     {"controller_cpu", o.controller_cpu},
                     {"sim_cpu", o.sim_cpu},
                     {"load_average_start", load_start},
                     {"load_average_end", load_average()},
                     {"controller_nice", o.controller_nice},
                     {"first_suspects_ms", suspects_ms},
                     {"first_metrics_ms", metrics_ms},
                     {"server_stages", stages},
                     {"controller_rss_kb_idle", idle.rss_kb},
                     {"controller_rss_kb_connected", connected.rss_kb},
                     {"controller_rss_kb", after.rss_kb},
                     {"controller_rss_hwm_kb", after.hwm_kb},
                     {"rss_per_connection_bytes", static_cast<double>(connected.rss_kb - idle.rss_kb) *
                                                      1024.0 / static_cast<double>(o.agents)},
                     {"rss_per_agent_bytes", static_cast<double>(after.rss_kb - idle.rss_kb) * 1024.0 /
                                                 static_cast<double>(o.agents)}};
  if (!L.first_error.empty()) out["first_error"] = L.first_error;
  if (o.json) {
    fmt::print("{}\n", out.dump());
  } else {
    fmt::print(
        "fleet: {} agents x {} targets for {:.0f} s: {} registered in {:.1f} s, {} up, {} pairs held, {} "
        "request "
        "errors, {} late reports\n",
        o.agents, o.targets, secs, fleet.registered(), reg_s, up, pairs, errors, fleet.late());
    for (int k = 0; k < kKinds; ++k)
      fmt::print("  {:20s} {:7} requests  p50 {:7.2f} ms  p99 {:7.2f} ms  max {:7.2f} ms\n", kKindNames[k],
                 L.ns[k].size(), pct_ms(L.ns[k], 0.5), pct_ms(L.ns[k], 0.99), pct_ms(L.ns[k], 1.0));
    fmt::print(
        "  controller: CPU {:.0f}% of a core, RSS {} MB ({:.0f} bytes per agent, {:.0f} per connection "
        "alone)\n",
        out["controller_cpu_percent"].get<double>(), after.rss_kb / 1024,
        out["rss_per_agent_bytes"].get<double>(), out["rss_per_connection_bytes"].get<double>());
    for (const auto& [route, st] : stages.items())
      for (const auto& [stage, v] : st.items())
        fmt::print("  server {:28s} {:8s} {:7} requests  p50 <= {} ms  p99 <= {} ms\n", route, stage,
                   v["count"].get<double>(), v["p50_le_ms"].dump(), v["p99_le_ms"].dump());
    fmt::print("  first /api/v1/suspects {:.0f} ms, first /metrics {:.0f} ms (whole mesh, after the run)\n",
               suspects_ms, metrics_ms);
    fmt::print("  load average {:.1f} -> {:.1f}\n", load_start, load_average());
    if (!L.first_error.empty()) fmt::print("first error: {}\n", L.first_error);
  }
  return errors == 0 && fleet.registered() == o.agents && up == o.agents ? 0 : 1;
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto* sub = root.bench->add_subcommand(
      "fleet",
      "One controller holding a fleet of simulated agents on kept-open connections (docs/BENCHMARKS.md)");
  auto o = std::make_shared<Options>();
  sub->add_option("--agents", o->agents, "Simulated agents (one connection each)")->capture_default_str();
  sub->add_option("--targets", o->targets, "Windows per agent per 10 s window")->capture_default_str();
  sub->add_option("--seconds", o->seconds, "How long they report")->capture_default_str();
  sub->add_option("--agents-per-address", o->agents_per_address,
                  "Agents sharing one 127.1.x.y source address")
      ->capture_default_str();
  sub->add_option("--port", o->port, "Loopback port for the controller")->capture_default_str();
  sub->add_option("--controller-cpu", o->controller_cpu, "Pin the controller to this CPU (-1: no)")
      ->capture_default_str();
  sub->add_option("--sim-cpu", o->sim_cpu, "Pin the simulated agents and API client to this CPU (-1: no)")
      ->capture_default_str();
  sub->add_option(
         "--controller-nice", o->controller_nice,
         "Nice value of the controller's threads (e.g. -10: ahead of other work on a shared machine)")
      ->capture_default_str();
  sub->add_flag("--tls", o->tls,
                "HTTPS: the controller with a throw-away self-signed certificate, one handshake per agent "
                "connection");
  sub->add_flag("--json", o->json, "Print one JSON object");
  sub->callback([o] { weft::cli::set_exit_code(run_fleet(*o)); });
}};

}  // namespace
