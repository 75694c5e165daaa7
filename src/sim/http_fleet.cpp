#include "sim/http_fleet.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/clock.hpp"
#include "proto/report.hpp"
#include "sim/http_load_client.hpp"
#include "sim/sample_windows.hpp"

namespace weft::sim {

namespace {
int64_t unix_ns() { return realtime_ns(); }

// One simulated agent: a kept-open connection with at most one request in flight.
struct Sim {
  int fd = -1;
  SSL* ssl = nullptr;  // with TLS
  std::string out, in;
  size_t off = 0;
  int64_t sent_ns = 0;
  RequestKind kind = kRegister;
  bool busy = false, tick_pending = false, want_pinglist = false;
  int64_t tick_unix_ns = 0;
  bool tick_windows = false, registered = false;
  uint64_t seq = 0, pl_version = 0;
};
}  // namespace

std::string fleet_agent_name(size_t a) { return fmt::format("agent-{:05d}", a); }
std::string fleet_agent_ip(size_t a, size_t per) {
  return fmt::format("127.1.{}.{}", a / per / 250, a / per % 250 + 1);
}

struct HttpFleet::Impl {
  Impl(const FleetOptions& o, ssl_ctx_st* tls) : o_(o), sims_(o.agents), tls_(tls) {}
  ~Impl() {
    for (const auto& s : sims_) {
      if (s.ssl) SSL_free(s.ssl);
      if (s.fd >= 0) ::close(s.fd);
    }
    if (ep_ >= 0) ::close(ep_);
  }

  Status connect_all() {
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    for (size_t a = 0; a < o_.agents; ++a) {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) return fail("socket: {} (agent {})", std::strerror(errno), a);
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
      sockaddr_in b{}, to{};
      b.sin_family = to.sin_family = AF_INET;
      inet_pton(AF_INET, fleet_agent_ip(a, o_.agents_per_address).c_str(), &b.sin_addr);
      to.sin_port = htons(o_.port);
      to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::bind(fd, reinterpret_cast<sockaddr*>(&b), sizeof b) != 0 ||
          ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
        int e = errno;
        ::close(fd);
        return fail("connect agent {}: {}", a, std::strerror(e));
      }
      if (tls_) {  // the handshake while the socket still blocks; the connection then stays open
        SSL* ssl = SSL_new(tls_);
        if (!ssl || SSL_set_fd(ssl, fd) != 1 || SSL_connect(ssl) != 1) {
          ERR_clear_error();
          if (ssl) SSL_free(ssl);
          ::close(fd);
          return fail("TLS handshake of agent {} failed", a);
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

  size_t in_flight() const {
    size_t n = 0;
    for (const auto& s : sims_) n += s.busy;
    return n;
  }

  void send_report(size_t a) {
    Sim& s = sims_[a];
    proto::Report r;
    r.agent = fleet_agent_name(a);
    r.seq = ++s.seq;
    r.health.cpu_percent = 1.5;
    r.health.rss_kb = 12000;
    r.health.probes_per_s = static_cast<double>(o_.targets) * 10;
    if (s.tick_windows) {
      int64_t wend = s.tick_unix_ns / 1'000'000 * 1'000'000;
      for (size_t t = 0; t < o_.targets; ++t) {
        std::string tgt = fleet_agent_name((a + 1 + t) % o_.agents);
        if (tgt == r.agent) continue;
        r.windows.push_back(sample_window(tgt, wend - kWindowNs, a * 31 + t + s.seq));
      }
      windows_sent_ += r.windows.size();
    }
    s.out = build_post_request("/api/v1/report", proto::kBinaryContentType, proto::encode_binary(r));
    send(a, s.tick_windows ? kReportWindows : kReport, false);
  }

  void send(size_t a, RequestKind k, bool build = true) {
    Sim& s = sims_[a];
    if (build && k == kRegister) {
      nlohmann::json j{{"name", fleet_agent_name(a)},
                       {"addresses", {fleet_agent_ip(a, o_.agents_per_address)}},
                       {"protocols", {"udp"}},
                       {"udp_port", 7777},
                       {"version", "bench-fleet"}};
      s.out = build_post_request("/api/v1/register", "application/json", j.dump());
    } else if (build && k == kPinglist) {
      s.out = fmt::format("GET /api/v1/pinglist?agent={}&version={} HTTP/1.1\r\nHost: bench\r\n\r\n",
                          fleet_agent_name(a), s.pl_version);
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
    if (lat_.first_error.empty()) lat_.first_error = fmt::format("{}: {}", fleet_agent_name(a), why);
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
        lat_.first_error = fmt::format("{}: HTTP {}: {}", fleet_agent_name(a), status, body);
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

  const FleetOptions o_;
  std::vector<Sim> sims_;
  ssl_ctx_st* tls_ = nullptr;
  int ep_ = -1;
  Latencies lat_;
  size_t registered_ = 0, late_ = 0, windows_sent_ = 0;
};

// The API client: /healthz, one rack's mesh, a registration, round robin, on kept-open connections
// from 127.0.0.1, until `stop`.
void api_client(const FleetOptions& o, ssl_ctx_st* tls, std::atomic<bool>& stop, Latencies& lat) {
  HttpLoadConnection c;
  if (!c.connect_loopback(o.port, tls)) return;
  size_t racks = (o.agents + 99) / 100;
  for (size_t i = 0; !stop.load(); ++i) {
    RequestKind k = static_cast<RequestKind>(kApiHealthz + i % 3);
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
      req = build_post_request("/api/v1/register", "application/json", j.dump());
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

HttpFleet::HttpFleet(const FleetOptions& o, ssl_ctx_st* tls) : impl_(std::make_unique<Impl>(o, tls)) {}
HttpFleet::~HttpFleet() = default;
Status HttpFleet::connect_all() { return impl_->connect_all(); }
double HttpFleet::register_all(int64_t timeout_ns) { return impl_->register_all(timeout_ns); }
void HttpFleet::run(double seconds) { impl_->run(seconds); }
Latencies& HttpFleet::lat() { return impl_->lat_; }
size_t HttpFleet::registered() const { return impl_->registered_; }
size_t HttpFleet::late() const { return impl_->late_; }
size_t HttpFleet::windows_sent() const { return impl_->windows_sent_; }

}  // namespace weft::sim
