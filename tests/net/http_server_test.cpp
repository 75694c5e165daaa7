// The event-driven HTTP server (net/http/server.hpp) on loopback: keep-alive and pipelining, lanes
// that keep a slow handler from holding up others, answers given before a body is read, and the
// protections (slowloris, idle timeout, per-address limit, shedding the oldest idle connection).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/http/server.hpp"

namespace weft::net::http {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// A blocking test client socket (optionally bound to another loopback source address).
struct Client {
  int fd = -1;
  std::string in;
  explicit Client(uint16_t port, const char* src = nullptr) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (src) {
      sockaddr_in b{};
      b.sin_family = AF_INET;
      inet_pton(AF_INET, src, &b.sin_addr);
      (void)::bind(fd, reinterpret_cast<sockaddr*>(&b), sizeof b);
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ~Client() {
    if (fd >= 0) ::close(fd);
  }
  bool send(std::string_view s) {
    while (!s.empty()) {
      ssize_t w = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
      if (w <= 0) return false;
      s.remove_prefix(static_cast<size_t>(w));
    }
    return true;
  }
  // Reads more within timeout_ms: >0 bytes read, 0 closed by the peer, -1 timeout, -2 error.
  int read_some(int timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return -1;
    char buf[65536];
    ssize_t got = ::recv(fd, buf, sizeof buf, 0);
    if (got < 0) return -2;
    in.append(buf, static_cast<size_t>(got));
    return static_cast<int>(got);
  }
  struct Answer {
    int status = 0;  // 0: nothing (timeout or closed)
    std::string body;
    bool close = false;
  };
  // One complete answer (Content-Length framing) within timeout_ms.
  Answer answer(int timeout_ms = 3000, bool head_only = false) {
    auto t0 = Clock::now();
    while (true) {
      auto end = in.find("\r\n\r\n");
      if (end != std::string::npos) {
        Answer a;
        a.status = std::atoi(in.c_str() + 9);
        size_t len = 0;
        auto cl = in.find("Content-Length: ");
        if (cl != std::string::npos && cl < end && !head_only) len = std::stoul(in.substr(cl + 16));
        a.close = in.find("Connection: close") < end;
        if (in.size() >= end + 4 + len) {
          a.body = in.substr(end + 4, len);
          in.erase(0, end + 4 + len);
          return a;
        }
      }
      int left = timeout_ms - static_cast<int>(ms_since(t0));
      if (left <= 0 || read_some(left) <= 0) return {};
    }
  }
  // Whether the server closes the connection within timeout_ms (reading and dropping anything).
  bool closed_within(int timeout_ms) {
    auto t0 = Clock::now();
    while (true) {
      int left = timeout_ms - static_cast<int>(ms_since(t0));
      if (left <= 0) return false;
      int r = read_some(left);
      if (r == 0 || r == -2) return true;
      if (r == -1) return false;
    }
  }
};

struct Fixture {
  std::unique_ptr<Server> server;
  uint16_t port = 0;
  std::atomic<int> handled{0};

  explicit Fixture(ServerOptions opt = {}) {
    Router r;
    r.add("GET", "/echo", [this](const Request& q, Response& s) {
      handled++;
      s.set(200, "x=" + q.param("x"), "text/plain");
    });
    r.add("POST", "/echo", [this](const Request& q, Response& s) {
      handled++;
      s.set(200, "body=" + q.body, "text/plain");
    });
    r.add(
        "GET", "/slow",
        [this](const Request&, Response& s) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1500));
          handled++;
          s.set(200, "slow", "text/plain");
        },
        1);
    r.add(
        "POST", "/guarded",
        [this](const Request&, Response& s) {
          handled++;
          s.set(200, "in", "text/plain");
        },
        0,
        [](const Request& q, Response& s) {
          if (q.header("authorization") == "yes") return true;
          s.set(401, "no", "text/plain");
          return false;
        });
    r.add("GET", "/throws", [](const Request&, Response&) { throw std::runtime_error("boom"); });
    if (opt.lane_threads.size() < 2) opt.lane_threads = {2, 1};
    server = std::make_unique<Server>(std::move(r), std::move(opt));
    auto sa = SocketAddress::parse_ip("127.0.0.1", 0);
    auto p = server->listen(*sa);
    EXPECT_TRUE(p.has_value());
    port = p ? *p : 0;
    EXPECT_TRUE(server->start().has_value());
  }
};

TEST(HttpServer, KeepAliveAndPipelinedRequestsAnswerInOrder) {
  Fixture f;
  Client c(f.port);
  ASSERT_GE(c.fd, 0);
  ASSERT_TRUE(
      c.send("GET /echo?x=1 HTTP/1.1\r\nHost: t\r\n\r\n"
             "POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"
             "GET /echo?x=3 HTTP/1.1\r\n\r\n"));
  auto a = c.answer(), b = c.answer(), d = c.answer();
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, "x=1");
  EXPECT_EQ(b.body, "body=hello");
  EXPECT_EQ(d.body, "x=3");
  EXPECT_FALSE(d.close);
  // The same connection serves a body sent in pieces.
  ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nContent-Length: 6\r\n\r\nab"));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(c.send("cdef"));
  EXPECT_EQ(c.answer().body, "body=abcdef");
  // Unknown path, HEAD, a throwing handler, and Connection: close.
  ASSERT_TRUE(c.send("GET /nope HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(c.answer().status, 404);
  ASSERT_TRUE(c.send("PUT /echo HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(c.answer().status, 405);
  ASSERT_TRUE(c.send("HEAD /echo?x=9 HTTP/1.1\r\n\r\n"));
  auto h = c.answer(500, true);
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(c.read_some(200), -1);  // no body after a HEAD answer
  EXPECT_TRUE(c.in.empty());
  ASSERT_TRUE(c.send("GET /throws HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(c.answer().status, 500);
  ASSERT_TRUE(c.send("GET /echo?x=4 HTTP/1.1\r\nConnection: close\r\n\r\n"));
  auto last = c.answer();
  EXPECT_EQ(last.body, "x=4");
  EXPECT_TRUE(last.close);
  EXPECT_TRUE(c.closed_within(1000));
}

TEST(HttpServer, ASlowHandlerHoldsUpNeitherReadsNorTheOtherLane) {
  Fixture f;
  Client slow(f.port), fast(f.port);
  ASSERT_TRUE(slow.send("GET /slow HTTP/1.1\r\n\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto t0 = Clock::now();
  ASSERT_TRUE(fast.send("GET /echo?x=f HTTP/1.1\r\n\r\n"));
  auto a = fast.answer();
  EXPECT_EQ(a.body, "x=f");
  EXPECT_LT(ms_since(t0), 500.0);
  EXPECT_EQ(slow.answer(3000).body, "slow");
}

TEST(HttpServer, ThousandIdleConnectionsDoNotBlockRequests) {
  Fixture f;
  std::vector<std::unique_ptr<Client>> idle;
  for (int i = 0; i < 1000; ++i) {
    idle.push_back(std::make_unique<Client>(f.port, "127.0.0.2"));
    ASSERT_GE(idle.back()->fd, 0) << i;
  }
  // 100 kept-open clients that each made a request and now wait.
  std::vector<std::unique_ptr<Client>> kept;
  for (int i = 0; i < 100; ++i) {
    kept.push_back(std::make_unique<Client>(f.port));
    ASSERT_TRUE(kept.back()->send("GET /echo?x=k HTTP/1.1\r\n\r\n"));
  }
  for (auto& k : kept) EXPECT_EQ(k->answer().body, "x=k");
  auto t0 = Clock::now();
  Client c(f.port);
  ASSERT_TRUE(c.send("GET /echo?x=new HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(c.answer().body, "x=new");
  EXPECT_LT(ms_since(t0), 500.0);
  // A kept-open client is still served on its connection.
  ASSERT_TRUE(kept[7]->send("GET /echo?x=again HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(kept[7]->answer().body, "x=again");
  EXPECT_GE(f.server->stats().open, 1101u);
}

TEST(HttpServer, LimitsAreAnsweredBeforeTheBodyIsRead) {
  ServerOptions o;
  o.limits.max_body_bytes = 1000;
  o.limits.max_head_bytes = 2048;
  Fixture f(o);
  {
    // The body is never sent: the answer must not wait for it.
    Client c(f.port);
    auto t0 = Clock::now();
    ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nContent-Length: 100000000\r\n\r\n"));
    auto a = c.answer(1000);
    EXPECT_EQ(a.status, 413);
    EXPECT_TRUE(a.close);
    EXPECT_LT(ms_since(t0), 1000.0);
  }
  {
    Client c(f.port);
    ASSERT_TRUE(c.send("GET /echo HTTP/1.1\r\nX-Big: " + std::string(4000, 'a') + "\r\n\r\n"));
    EXPECT_EQ(c.answer(1000).status, 431);
  }
  {
    // The head check (a token) answers before the body: 401 while the body is still to come.
    Client c(f.port);
    ASSERT_TRUE(c.send("POST /guarded HTTP/1.1\r\nContent-Length: 900\r\n\r\n"));
    auto a = c.answer(1000);
    EXPECT_EQ(a.status, 401);
    EXPECT_TRUE(a.close);
  }
  {
    // A client that sends its body anyway still reads the answer (lingering close), and with
    // the body already in, the connection stays usable.
    Client c(f.port);
    ASSERT_TRUE(c.send("POST /guarded HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"));
    auto a = c.answer(1000);
    EXPECT_EQ(a.status, 401);
    ASSERT_TRUE(c.send("POST /guarded HTTP/1.1\r\nAuthorization: yes\r\nContent-Length: 3\r\n\r\nabc"));
    EXPECT_EQ(c.answer(1000).body, "in");
  }
  {
    Client c(f.port);
    ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"));
    EXPECT_EQ(c.answer(1000).status, 501);
  }
  EXPECT_EQ(f.handled.load(), 1);
}

TEST(HttpServer, SlowlorisIsCutOffAfterTheHeaderTimeout) {
  ServerOptions o;
  o.header_timeout_ns = 600'000'000;
  Fixture f(o);
  Client c(f.port);
  ASSERT_TRUE(c.send("GET /echo HTTP/1.1\r\n"));
  auto t0 = Clock::now();
  int answered = 0;
  // One header byte every 100 ms, for at most 3 s.
  while (ms_since(t0) < 3000) {
    if (!c.send("X")) break;
    if (c.read_some(100) != -1) {
      answered = 1;
      break;
    }
  }
  EXPECT_EQ(answered, 1);
  EXPECT_LT(ms_since(t0), 1500.0);
  EXPECT_NE(c.in.find("408"), std::string::npos) << c.in;
  EXPECT_TRUE(c.closed_within(3000));
  EXPECT_GE(f.server->stats().timed_out_request, 1u);
}

TEST(HttpServer, IdleConnectionsTimeOut) {
  ServerOptions o;
  o.idle_timeout_ns = 300'000'000;
  Fixture f(o);
  Client c(f.port);
  ASSERT_TRUE(c.send("GET /echo?x=1 HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(c.answer().body, "x=1");
  auto t0 = Clock::now();
  EXPECT_TRUE(c.closed_within(2000));
  EXPECT_GT(ms_since(t0), 150.0);
  EXPECT_EQ(f.server->stats().timed_out_idle, 1u);
}

TEST(HttpServer, PerAddressLimit) {
  ServerOptions o;
  o.max_connections_per_address = 5;
  Fixture f(o);
  std::vector<std::unique_ptr<Client>> cs;
  for (int i = 0; i < 5; ++i) cs.push_back(std::make_unique<Client>(f.port, "127.0.0.1"));
  for (auto& c : cs) {
    ASSERT_TRUE(c->send("GET /echo?x=1 HTTP/1.1\r\n\r\n"));
    EXPECT_EQ(c->answer().status, 200);
  }
  Client sixth(f.port, "127.0.0.1");
  auto a = sixth.answer(1000);
  EXPECT_EQ(a.status, 503);
  EXPECT_TRUE(sixth.closed_within(1000));
  Client other(f.port, "127.0.0.2");  // another address is still served
  ASSERT_TRUE(other.send("GET /echo?x=2 HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(other.answer().body, "x=2");
  EXPECT_EQ(f.server->stats().refused_address, 1u);
  cs.pop_back();  // one closes: room again
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Client again(f.port, "127.0.0.1");
  ASSERT_TRUE(again.send("GET /echo?x=3 HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(again.answer().body, "x=3");
}

TEST(HttpServer, AtTheCapTheOldestIdleConnectionMakesRoom) {
  ServerOptions o;
  o.max_connections = 20;
  Fixture f(o);
  std::vector<std::unique_ptr<Client>> cs;
  for (int i = 0; i < 20; ++i) {
    cs.push_back(std::make_unique<Client>(f.port));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // Keep the first busy-ish: it made a request after the others connected, so it is not the oldest idle.
  ASSERT_TRUE(cs[0]->send("GET /echo?x=0 HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(cs[0]->answer().body, "x=0");
  Client extra(f.port);
  ASSERT_TRUE(extra.send("GET /echo?x=e HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(extra.answer().body, "x=e");
  EXPECT_TRUE(cs[1]->closed_within(1000));  // the longest idle
  ASSERT_TRUE(cs[0]->send("GET /echo?x=0 HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(cs[0]->answer().body, "x=0");
  EXPECT_EQ(f.server->stats().shed_idle, 1u);
}

// The timing hook: where a request spent its time, measured on the server's side. Lower bounds
// only (a loaded machine makes every stage longer, never shorter): a handler that sleeps 200 ms
// took at least that in `handler`, and a second request for the lane's only worker waited at least
// most of it in `queue`.
TEST(HttpServer, TimingHookSplitsQueueFromHandler) {
  std::mutex mu;
  std::vector<RequestTiming> seen;
  std::vector<std::string> patterns;
  ServerOptions opt;
  opt.lane_threads = {1};
  opt.on_request = [&](const RequestTiming& t) {
    std::lock_guard lk(mu);
    seen.push_back(t);
    patterns.emplace_back(t.pattern);
  };
  Router r;
  r.add("GET", "/sleep/*", [](const Request&, Response& s) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    s.set(201, "z", "text/plain");
  });
  Server server(std::move(r), std::move(opt));
  auto p = server.listen(*SocketAddress::parse_ip("127.0.0.1", 0));
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(server.start().has_value());
  Client a(*p), b(*p);
  ASSERT_TRUE(a.send("GET /sleep/1 HTTP/1.1\r\n\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(b.send("GET /sleep/2 HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(a.answer().status, 201);
  EXPECT_EQ(b.answer().status, 201);
  server.stop();
  std::lock_guard lk(mu);
  ASSERT_EQ(seen.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(seen[i].method, "GET");
    EXPECT_EQ(patterns[i], "/sleep/*");
    EXPECT_EQ(seen[i].status, 201);
    EXPECT_GE(seen[i].handler_ns, 200'000'000);
    EXPECT_GE(seen[i].read_ns, 0);
    EXPECT_GE(seen[i].reply_ns, 0);
  }
  // The second waited for the first (sent 20 ms later, so at least 180 ms of its 200 ms).
  EXPECT_GE(std::max(seen[0].queue_ns, seen[1].queue_ns), 150'000'000);
}

}  // namespace
}  // namespace weft::net::http
