#include "net/http/server.hpp"

#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "net/epoll.hpp"
#include "net/socket.hpp"

namespace weft::net::http {
namespace {

int64_t mono_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

enum Kind : uint8_t { kListener = 1, kWake = 2, kConn = 3 };

constexpr int64_t kSweepNs = 250'000'000;     // how often deadlines are checked
constexpr size_t kReadChunk = 64 * 1024;      // one read()
constexpr size_t kReadsPerEvent = 16;         // then other connections get their turn
constexpr size_t kDrainMaxBytes = 16u << 20;  // discarded at most while lingering
constexpr size_t kKeepBufferBytes = 4096;     // a larger idle buffer is given back
constexpr size_t kTlsJoinBody = 16 * 1024;    // TLS: a body this small goes out in the head's record

void default_error(Response& res, int status, std::string_view msg) {
  res.set(status, std::string(msg) + "\n", "text/plain; charset=utf-8");
}

bool no_body_status(int st) { return (st >= 100 && st < 200) || st == 204 || st == 304; }

std::string serialize_head(const Response& res, size_t body_size, bool keep_alive) {
  std::string h = fmt::format("HTTP/1.1 {} {}\r\n", res.status, reason_phrase(res.status));
  if (!res.content_type.empty()) h += fmt::format("Content-Type: {}\r\n", res.content_type);
  if (!no_body_status(res.status)) h += fmt::format("Content-Length: {}\r\n", body_size);
  h += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  for (const auto& [k, v] : res.headers) h += fmt::format("{}: {}\r\n", k, v);
  h += "\r\n";
  return h;
}

}  // namespace

struct Server::Impl {
  struct Conn {
    uint64_t id = 0;
    Fd fd;
    std::string peer;
    enum class St { reading, working, writing, draining } st = St::reading;
    uint32_t events = 0;
    std::string in;  // received, not yet consumed
    bool have_head = false;
    Request req;
    const Route* route = nullptr;
    int64_t request_start = 0;  // first byte of the request being read; 0 while idle
    int64_t last_io = 0;
    int64_t drain_deadline = 0;
    size_t drained = 0;
    std::string out_head, out_body;
    size_t out_off = 0;  // over out_head then out_body
    bool close_after = false;
    bool drain_after = false;
    bool dead = false;  // peer gone while a worker had the request
    bool idle = false;
    std::list<Conn*>::iterator idle_it;
    SSL* ssl = nullptr;        // TLS connections only
    bool handshaking = false;  // TLS handshake not finished yet
    std::string tls_client;    // the verified client certificate's name (mutual TLS)
    ~Conn() {
      if (ssl) SSL_free(ssl);
    }
  };
  struct Job {
    uint64_t conn = 0;
    Request req;
    const Route* route = nullptr;
    int64_t started_ns = 0, queued_ns = 0;  // the request's first byte, its dispatch (mono_ns)
  };
  struct Done {
    uint64_t conn = 0;
    Response res;
    bool keep_alive = true;
    bool head_only = false;
    const Route* route = nullptr;
    RequestTiming timing;  // read_ns, queue_ns, handler_ns filled in; reply_ns by collect_done
    int64_t done_ns = 0;
  };
  struct Lane {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Job> jobs;
    std::vector<std::thread> threads;
  };

  Router router;
  ServerOptions opt;
  size_t cap = 0;
  Epoll ep;
  EventFd wake;
  std::vector<Fd> listeners;
  bool listeners_paused = false;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns;
  std::unordered_map<std::string, uint32_t> per_address;
  std::list<Conn*> idle;  // oldest idle first
  uint64_t next_id = 1;
  std::vector<uint64_t> ready;       // connections with a pipelined request to parse
  std::vector<uint64_t> tls_unread;  // TLS connections with bytes in OpenSSL's read-ahead buffer
  std::vector<std::unique_ptr<Lane>> lanes;
  std::mutex done_mu;
  std::vector<Done> done;
  std::thread loop_thread;
  std::atomic<bool> stopping{false};
  bool started = false;
  std::vector<char> scratch = std::vector<char>(kReadChunk);

  struct Counters {
    std::atomic<uint64_t> open{0}, accepted{0}, requests{0}, early{0}, shed{0}, refused_address{0},
        refused_full{0}, idle_timeouts{0}, request_timeouts{0}, tls_handshakes{0}, tls_failures{0},
        tls_timeouts{0};
  } n;

  Impl(Router r, ServerOptions o) : router(std::move(r)), opt(std::move(o)) {
    if (!opt.error_response) opt.error_response = default_error;
    if (opt.lane_threads.size() < router.lanes()) opt.lane_threads.resize(router.lanes(), 1);
    for (auto& t : opt.lane_threads) t = std::max<size_t>(t, 1);
  }

  // ---- connection bookkeeping ----
  void set_events(Conn& c, uint32_t ev) {
    if (c.events == ev || c.dead) return;
    c.events = ev;
    (void)ep.modify(c.fd.get(), ev, event_tag(kConn, c.id));
  }
  void enter_idle(Conn& c) {
    if (c.idle) return;
    c.idle = true;
    c.idle_it = idle.insert(idle.end(), &c);
  }
  void leave_idle(Conn& c) {
    if (!c.idle) return;
    c.idle = false;
    idle.erase(c.idle_it);
  }
  void close_conn(Conn& c) {
    leave_idle(c);
    if (!c.dead) ep.remove(c.fd.get());
    if (auto it = per_address.find(c.peer); it != per_address.end() && --it->second == 0)
      per_address.erase(it);
    n.open--;
    conns.erase(c.id);  // destroys c and closes the socket
  }

  // A short answer to a connection that is not taken, then close.
  void refuse(int fd, std::string_view why) {
    if (opt.tls) {  // a TLS client would read a plain-text answer as garbage: just close
      ::close(fd);
      return;
    }
    Response res;
    opt.error_response(res, 503, why);
    std::string msg = serialize_head(res, res.body.size(), false) + res.body;
    [[maybe_unused]] auto w = ::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::close(fd);
  }

  // ---- accepting ----
  void accept_all(int lfd) {
    for (int i = 0; i < 256; ++i) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      int fd = ::accept4(lfd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: make room by closing the connection idle the longest, or stop
          // accepting until the next sweep (the listen backlog holds the rest).
          if (!idle.empty()) {
            n.shed++;
            close_conn(*idle.front());
            continue;
          }
          pause_listeners();
        }
        return;
      }
      std::string peer = SocketAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), len).ip_string();
      auto& count = per_address[peer];
      if (count >= opt.max_connections_per_address) {
        n.refused_address++;
        if (count == 0) per_address.erase(peer);
        refuse(fd, "too many connections from this address");
        continue;
      }
      if (conns.size() >= cap) {
        if (idle.empty()) {
          n.refused_full++;
          if (count == 0) per_address.erase(peer);
          refuse(fd, "too many connections");
          continue;
        }
        n.shed++;
        close_conn(*idle.front());
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto c = std::make_unique<Conn>();
      c->id = next_id++;
      c->fd.reset(fd);
      c->peer = std::move(peer);
      c->last_io = mono_ns();
      c->events = EPOLLIN | EPOLLRDHUP;
      if (opt.tls) {
        // The handshake is the first request's head as far as deadlines go (header_timeout).
        c->ssl = opt.tls->new_connection();
        if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) continue;  // c frees both
        SSL_set_accept_state(c->ssl);
        c->handshaking = true;
        c->request_start = c->last_io;
      }
      if (!ep.add(fd, c->events, event_tag(kConn, c->id))) continue;  // c closes fd
      per_address[c->peer]++;
      n.open++;
      n.accepted++;
      Conn& ref = *c;
      conns.emplace(ref.id, std::move(c));
      if (!ref.handshaking) enter_idle(ref);
    }
  }
  void pause_listeners() {
    if (listeners_paused) return;
    listeners_paused = true;
    for (auto& l : listeners) ep.remove(l.get());
  }
  void resume_listeners() {
    if (!listeners_paused) return;
    listeners_paused = false;
    for (size_t i = 0; i < listeners.size(); ++i)
      (void)ep.add(listeners[i].get(), EPOLLIN, event_tag(kListener, i));
  }

  // ---- reading ----
  // TLS: the epoll interest a WANT_READ/WANT_WRITE asks for; false after any other failure.
  bool tls_wait(Conn& c, int ret, uint32_t readable_events) {
    switch (SSL_get_error(c.ssl, ret)) {
      case SSL_ERROR_WANT_READ:
        set_events(c, readable_events);
        return true;
      case SSL_ERROR_WANT_WRITE:
        set_events(c, EPOLLOUT);
        return true;
      default:
        ERR_clear_error();
        return false;
    }
  }

  // Drives the TLS handshake; false when the connection was closed or must wait for the peer.
  bool handshake(Conn& c) {
    ERR_clear_error();
    int r = SSL_do_handshake(c.ssl);
    if (r == 1) {
      c.handshaking = false;
      n.tls_handshakes++;
      if (opt.tls->verifies_clients()) c.tls_client = tls_peer_name(c.ssl);
      c.last_io = mono_ns();
      set_events(c, EPOLLIN | EPOLLRDHUP);
      return true;
    }
    if (tls_wait(c, r, EPOLLIN | EPOLLRDHUP)) return false;
    // Not TLS, no version or cipher in common, a client certificate that does not verify: a
    // per-connection log line would let anyone fill the log, so only the count says it.
    n.tls_failures++;
    close_conn(c);
    return false;
  }

  // One read: plain recv(), or SSL_read() (which may also need to write, or to wait). Returns the
  // bytes read, 0 at the end, -1 for "wait for the next event", -2 after an error.
  ssize_t read_some(Conn& c) {
    if (!c.ssl || c.st == Conn::St::draining) {  // a lingering TLS connection's bytes are discarded raw
      ssize_t got = ::recv(c.fd.get(), scratch.data(), scratch.size(), 0);
      if (got >= 0) return got;
      if (errno == EINTR) return read_some(c);
      return errno == EAGAIN || errno == EWOULDBLOCK ? -1 : -2;
    }
    ERR_clear_error();
    int r = SSL_read(c.ssl, scratch.data(), static_cast<int>(scratch.size()));
    if (r > 0) return r;
    if (SSL_get_error(c.ssl, r) == SSL_ERROR_ZERO_RETURN) return 0;  // close_notify
    return tls_wait(c, r, EPOLLIN | EPOLLRDHUP) ? -1 : -2;
  }

  // Bytes OpenSSL read ahead are out of the socket: no event will announce them, so the loop
  // reads such a connection again on its next pass (after kReadsPerEvent, or after a write).
  void note_tls_unread(const Conn& c) {
    if (c.ssl && c.st != Conn::St::draining && !c.handshaking && SSL_has_pending(c.ssl))
      tls_unread.push_back(c.id);
  }

  void run_tls_unread() {
    std::vector<uint64_t> ids;
    ids.swap(tls_unread);
    for (uint64_t id : ids)
      if (auto it = conns.find(id); it != conns.end() && it->second->st == Conn::St::reading)
        on_readable(*it->second);
  }

  void on_readable(Conn& c) {
    if (c.ssl && c.handshaking && !handshake(c)) return;
    for (size_t i = 0; i < kReadsPerEvent; ++i) {
      ssize_t got = read_some(c);
      if (got == 0 || got == -2) return close_conn(c);
      if (got == -1) break;
      if (c.ssl && c.events != (EPOLLIN | EPOLLRDHUP)) set_events(c, EPOLLIN | EPOLLRDHUP);
      c.last_io = mono_ns();
      if (c.st == Conn::St::draining) {
        c.drained += static_cast<size_t>(got);
        if (c.drained > kDrainMaxBytes) return close_conn(c);
        continue;
      }
      feed(c, std::string_view(scratch.data(), static_cast<size_t>(got)));
      // A short plain read emptied the socket. SSL_read returns one record (<= 16 KiB) at a
      // time: a TLS connection reads on while OpenSSL has bytes left from its read-ahead; what is
      // still in the socket raises the next (level-triggered) event.
      if (!c.ssl && static_cast<size_t>(got) < scratch.size()) break;
      if (c.ssl && c.st != Conn::St::draining && !SSL_has_pending(c.ssl)) break;
    }
    note_tls_unread(c);
    if (c.st == Conn::St::reading) advance(c);
  }

  // Body bytes go straight to the request being read; the rest waits in `in`.
  void feed(Conn& c, std::string_view data) {
    leave_idle(c);
    if (c.request_start == 0) c.request_start = c.last_io;
    if (c.have_head && c.in.empty()) {
      size_t take = std::min(data.size(), c.req.content_length - c.req.body.size());
      c.req.body.append(data.substr(0, take));
      data.remove_prefix(take);
    }
    c.in.append(data);
  }

  void consume(Conn& c, size_t bytes) {
    c.in.erase(0, bytes);
    if (c.in.empty() && c.in.capacity() > kKeepBufferBytes) std::string().swap(c.in);
  }

  // Parses and dispatches what `in` holds, as long as the connection is free to.
  void advance(Conn& c) {
    while (c.st == Conn::St::reading) {
      if (!c.have_head) {
        if (c.in.empty()) {
          c.request_start = 0;
          enter_idle(c);
          return;
        }
        leave_idle(c);
        if (c.request_start == 0) c.request_start = mono_ns();
        HeadResult r = parse_head(c.in, opt.limits, c.req);
        if (r.kind == HeadResult::Kind::incomplete) return;
        if (r.kind == HeadResult::Kind::error) {
          Response res;
          opt.error_response(res, r.status, r.message);
          return early_answer(c, std::move(res), /*framing_known=*/false);
        }
        consume(c, r.head_bytes);
        c.have_head = true;
        c.req.peer = c.peer;
        c.req.tls_client = c.tls_client;
        bool known = false;
        c.route = router.match(c.req, &known);
        if (!c.route) {
          Response res;
          if (known)
            opt.error_response(res, 405,
                               fmt::format("method {} not allowed on {}", c.req.method, c.req.path));
          else
            opt.error_response(res, 404, fmt::format("no such endpoint: {} {}", c.req.method, c.req.path));
          return early_answer(c, std::move(res), true);
        }
        if (c.route->check) {
          Response res;
          if (!c.route->check(c.req, res)) return early_answer(c, std::move(res), true);
        }
        if (c.req.expect_continue && c.req.content_length > 0) {
          static constexpr std::string_view k100 = "HTTP/1.1 100 Continue\r\n\r\n";
          if (c.ssl) {
            // A TLS write that could not finish must be retried with the same bytes before any
            // other: rather than keep this one pending, close (a new connection's send buffer is
            // empty, so this does not happen in practice).
            ERR_clear_error();
            if (SSL_write(c.ssl, k100.data(), static_cast<int>(k100.size())) !=
                static_cast<int>(k100.size())) {
              ERR_clear_error();
              return close_conn(c);
            }
          } else {
            [[maybe_unused]] auto w =
                ::send(c.fd.get(), k100.data(), k100.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
          }
        }
        c.req.body.clear();
        c.req.body.reserve(c.req.content_length);
      }
      size_t need = c.req.content_length - c.req.body.size();
      if (need > 0 && !c.in.empty()) {
        size_t take = std::min(need, c.in.size());
        c.req.body.append(c.in, 0, take);
        consume(c, take);
        need -= take;
      }
      if (need > 0) return;  // the rest of the body is still coming
      return dispatch(c);
    }
  }

  // Hands a complete request to its lane; the connection reads nothing more until it is answered.
  void dispatch(Conn& c) {
    c.st = Conn::St::working;
    set_events(c, 0);
    n.requests++;
    Lane& lane = *lanes[std::min(c.route->lane, lanes.size() - 1)];
    const int64_t now = mono_ns();
    {
      std::lock_guard lk(lane.mu);
      lane.jobs.push_back(Job{c.id, std::move(c.req), c.route, c.request_start ? c.request_start : now, now});
    }
    lane.cv.notify_one();
    c.req = Request{};
    c.have_head = false;
  }

  // An answer given before the body was read. When the request's framing is unknown (a bad head)
  // or its body has not all arrived, the connection closes after the answer, draining briefly.
  void early_answer(Conn& c, Response res, bool framing_known) {
    n.early++;
    bool body_here = framing_known && c.in.size() >= c.req.content_length;
    bool keep = body_here && c.req.keep_alive && !res.close;
    if (body_here) consume(c, c.req.content_length);
    c.drain_after = !body_here;
    bool head_only = c.req.method == "HEAD";
    c.req = Request{};
    c.have_head = false;
    start_write(c, std::move(res), keep, head_only);
  }

  // ---- writing ----
  void start_write(Conn& c, Response res, bool keep_alive, bool head_only) {
    keep_alive = keep_alive && !res.close;
    c.close_after = !keep_alive;
    c.out_head = serialize_head(res, res.body.size(), keep_alive);
    c.out_body = head_only || no_body_status(res.status) ? std::string() : std::move(res.body);
    if (c.ssl && c.out_body.size() <= kTlsJoinBody) {  // one record (and one write) for both
      c.out_head += c.out_body;
      std::string().swap(c.out_body);
    }
    c.out_off = 0;
    c.st = Conn::St::writing;
    c.last_io = mono_ns();
    on_writable(c);
  }

  void on_writable(Conn& c) {
    while (true) {
      size_t total = c.out_head.size() + c.out_body.size();
      if (c.out_off >= total) return finished_write(c);
      if (c.ssl) {
        // SSL_write has no gather: the head, then the body. After a WANT_* the same bytes are
        // offered again (out_off moves only on success), as OpenSSL requires.
        const bool in_head = c.out_off < c.out_head.size();
        const std::string& buf = in_head ? c.out_head : c.out_body;
        const size_t off = in_head ? c.out_off : c.out_off - c.out_head.size();
        const size_t len = std::min<size_t>(buf.size() - off, 1u << 30);
        ERR_clear_error();
        int w = SSL_write(c.ssl, buf.data() + off, static_cast<int>(len));
        if (w <= 0) {
          if (tls_wait(c, w, EPOLLIN)) return;
          return close_conn(c);
        }
        c.out_off += static_cast<size_t>(w);
        c.last_io = mono_ns();
        continue;
      }
      iovec iov[2];
      int cnt = 0;
      if (c.out_off < c.out_head.size()) {
        iov[cnt++] = {c.out_head.data() + c.out_off, c.out_head.size() - c.out_off};
        if (!c.out_body.empty()) iov[cnt++] = {c.out_body.data(), c.out_body.size()};
      } else {
        size_t off = c.out_off - c.out_head.size();
        iov[cnt++] = {c.out_body.data() + off, c.out_body.size() - off};
      }
      msghdr mh{};
      mh.msg_iov = iov;
      mh.msg_iovlen = static_cast<size_t>(cnt);
      ssize_t w = ::sendmsg(c.fd.get(), &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          set_events(c, EPOLLOUT);
          return;
        }
        return close_conn(c);
      }
      c.out_off += static_cast<size_t>(w);
      c.last_io = mono_ns();
    }
  }

  void finished_write(Conn& c) {
    std::string().swap(c.out_head);
    std::string().swap(c.out_body);
    c.out_off = 0;
    if (c.close_after) {
      if (!c.drain_after) return close_conn(c);
      // Lingering close: the client may still be sending the body we did not want; reading and
      // discarding it for a moment lets it read our answer instead of a connection reset.
      if (c.ssl) {
        ERR_clear_error();
        (void)SSL_shutdown(c.ssl);  // close_notify, best effort
        ERR_clear_error();
      }
      ::shutdown(c.fd.get(), SHUT_WR);
      std::string().swap(c.in);
      c.st = Conn::St::draining;
      c.drain_deadline = mono_ns() + opt.linger_ns;
      set_events(c, EPOLLIN | EPOLLRDHUP);
      return;
    }
    c.st = Conn::St::reading;
    c.request_start = 0;
    set_events(c, EPOLLIN | EPOLLRDHUP);
    note_tls_unread(c);
    // A pipelined request may already be here: the loop parses it next (not from here, so that
    // many pipelined requests answered at once do not nest calls).
    if (!c.in.empty())
      ready.push_back(c.id);
    else
      enter_idle(c);
  }

  void run_ready() {
    while (!ready.empty()) {
      std::vector<uint64_t> ids;
      ids.swap(ready);
      for (uint64_t id : ids)
        if (auto it = conns.find(id); it != conns.end() && it->second->st == Conn::St::reading)
          advance(*it->second);
    }
  }

  // ---- workers ----
  void worker(Lane& lane) {
    while (true) {
      Job job;
      {
        std::unique_lock lk(lane.mu);
        lane.cv.wait(lk, [&] { return stopping.load() || !lane.jobs.empty(); });
        if (lane.jobs.empty()) return;  // stopping
        job = std::move(lane.jobs.front());
        lane.jobs.pop_front();
      }
      Done d;
      d.conn = job.conn;
      d.keep_alive = job.req.keep_alive;
      d.head_only = job.req.method == "HEAD";
      d.route = job.route;
      const int64_t picked = mono_ns();
      try {
        job.route->handler(job.req, d.res);
      } catch (...) {
        d.res = Response{};
        opt.error_response(d.res, 500, "internal error");
      }
      d.done_ns = mono_ns();
      d.timing.read_ns = job.queued_ns - job.started_ns;
      d.timing.queue_ns = picked - job.queued_ns;
      d.timing.handler_ns = d.done_ns - picked;
      {
        std::lock_guard lk(done_mu);
        done.push_back(std::move(d));
      }
      wake.signal();
    }
  }

  void collect_done() {
    wake.drain();
    std::vector<Done> ds;
    {
      std::lock_guard lk(done_mu);
      ds.swap(done);
    }
    for (auto& d : ds) {
      auto it = conns.find(d.conn);
      if (it == conns.end()) continue;
      Conn& c = *it->second;
      if (c.dead) {
        close_conn(c);
        continue;
      }
      c.drain_after = false;
      if (opt.on_request) {
        d.timing.method = d.route->method;
        d.timing.pattern = d.route->pattern;
        d.timing.status = d.res.status;
        d.timing.reply_ns = mono_ns() - d.done_ns;
        opt.on_request(d.timing);
      }
      start_write(c, std::move(d.res), d.keep_alive, d.head_only);
    }
  }

  // ---- deadlines ----
  void sweep(int64_t now) {
    resume_listeners();
    std::vector<Conn*> expired_idle, expired_req, expired_other, expired_handshake;
    for (auto& [id, cp] : conns) {
      Conn& c = *cp;
      switch (c.st) {
        case Conn::St::reading:
          if (c.request_start == 0) {
            if (now - c.last_io > opt.idle_timeout_ns) expired_idle.push_back(&c);
          } else if (c.handshaking) {
            if (now - c.request_start > opt.header_timeout_ns) expired_handshake.push_back(&c);
          } else if ((!c.have_head && now - c.request_start > opt.header_timeout_ns) ||
                     now - c.request_start > opt.request_timeout_ns) {
            expired_req.push_back(&c);
          }
          break;
        case Conn::St::writing:
          if (now - c.last_io > opt.write_timeout_ns) expired_other.push_back(&c);
          break;
        case Conn::St::draining:
          if (now > c.drain_deadline) expired_other.push_back(&c);
          break;
        case Conn::St::working:
          break;
      }
    }
    for (Conn* c : expired_idle) {
      n.idle_timeouts++;
      close_conn(*c);
    }
    for (Conn* c : expired_handshake) {  // nothing can be answered before the handshake
      n.request_timeouts++;
      n.tls_timeouts++;
      close_conn(*c);
    }
    for (Conn* c : expired_req) {
      n.request_timeouts++;
      Response res;
      opt.error_response(res, 408, "request not received in time");
      early_answer(*c, std::move(res), false);
    }
    for (Conn* c : expired_other) {
      if (c->st == Conn::St::writing) n.request_timeouts++;
      close_conn(*c);
    }
  }

  void loop() {
    // OpenSSL writes to the socket with plain send() (no MSG_NOSIGNAL): a peer gone away must
    // cost a failed write, not the process. Blocked here, a SIGPIPE stays pending on this thread.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    std::vector<epoll_event> evs(512);
    int64_t next_sweep = mono_ns() + kSweepNs;
    while (!stopping.load()) {
      int64_t now = mono_ns();
      int64_t wait_ns = tls_unread.empty() ? std::max<int64_t>(0, next_sweep - now) : 0;
      auto got = ep.wait(evs.data(), static_cast<int>(evs.size()), wait_ns);
      if (!got) break;
      for (int i = 0; i < *got; ++i) {
        uint64_t tag = evs[i].data.u64;
        uint32_t e = evs[i].events;
        switch (event_kind(tag)) {
          case kListener:
            if (!listeners_paused) accept_all(listeners[event_value(tag)].get());
            break;
          case kWake:
            collect_done();
            break;
          case kConn: {
            auto it = conns.find(event_value(tag));
            if (it == conns.end()) break;
            Conn& c = *it->second;
            if (c.st == Conn::St::working) {
              // The peer went away while a worker has its request: stop watching the socket (a
              // reset would be reported again and again) and close when the answer comes.
              if (e & (EPOLLHUP | EPOLLERR)) {
                ep.remove(c.fd.get());
                c.dead = true;
              }
              break;
            }
            if (c.st == Conn::St::writing) {
              if (e & (EPOLLHUP | EPOLLERR)) {
                close_conn(c);
                break;
              }
              // EPOLLIN: a TLS write that had to read first (tls_wait).
              if (e & (EPOLLOUT | EPOLLIN)) on_writable(c);
              break;
            }
            // EPOLLOUT: a TLS read or handshake that had to write first (tls_wait).
            if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR | EPOLLOUT)) on_readable(c);
            break;
          }
          default:
            break;
        }
      }
      run_ready();
      run_tls_unread();
      run_ready();
      now = mono_ns();
      if (now >= next_sweep) {
        sweep(now);
        run_ready();
        next_sweep = now + kSweepNs;
      }
    }
  }
};

Server::Server(Router router, ServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(router), std::move(options))) {}

Server::~Server() { stop(); }

Result<uint16_t> Server::listen(const SocketAddress& addr, int backlog) {
  auto fd = tcp_listener(addr, backlog);
  if (!fd) return std::unexpected(fd.error());
  auto local = local_address(fd->get());
  if (!local) return std::unexpected(local.error());
  impl_->listeners.push_back(std::move(*fd));
  return local->port();
}

Status Server::start() {
  Impl& m = *impl_;
  if (m.started) return fail("the HTTP server is already started");
  auto ep = Epoll::create();
  if (!ep) return std::unexpected(ep.error());
  m.ep = std::move(*ep);
  auto wake = EventFd::create();
  if (!wake) return std::unexpected(wake.error());
  m.wake = std::move(*wake);
  if (auto st = m.ep.add(m.wake.fd(), EPOLLIN, event_tag(kWake, 0)); !st) return st;
  for (size_t i = 0; i < m.listeners.size(); ++i)
    if (auto st = m.ep.add(m.listeners[i].get(), EPOLLIN, event_tag(kListener, i)); !st) return st;
  // Leave descriptors for everything else the process opens (store, logs, outgoing sockets).
  uint64_t limit = raise_fd_limit();
  uint64_t room = limit > 512 ? limit - 256 : limit / 2;
  m.cap = std::max<size_t>(1, std::min<uint64_t>(m.opt.max_connections, room));
  for (size_t t : m.opt.lane_threads) {
    auto lane = std::make_unique<Impl::Lane>();
    Impl::Lane* raw = lane.get();
    for (size_t i = 0; i < t; ++i) raw->threads.emplace_back([&m, raw] { m.worker(*raw); });
    m.lanes.push_back(std::move(lane));
  }
  m.started = true;
  m.loop_thread = std::thread([&m] { m.loop(); });
  return {};
}

void Server::stop() {
  Impl& m = *impl_;
  if (!m.started) return;
  m.started = false;
  m.stopping = true;
  m.wake.signal();
  if (m.loop_thread.joinable()) m.loop_thread.join();
  for (auto& lane : m.lanes) {
    {
      std::lock_guard lk(lane->mu);
      lane->jobs.clear();
    }
    lane->cv.notify_all();
    for (auto& t : lane->threads)
      if (t.joinable()) t.join();
  }
  m.lanes.clear();
  m.conns.clear();
  m.idle.clear();
  m.per_address.clear();
  m.listeners.clear();
  m.n.open = 0;
}

ServerStats Server::stats() const {
  const auto& n = impl_->n;
  return ServerStats{n.open.load(),           n.accepted.load(),      n.requests.load(),
                     n.early.load(),          n.shed.load(),          n.refused_address.load(),
                     n.refused_full.load(),   n.idle_timeouts.load(), n.request_timeouts.load(),
                     n.tls_handshakes.load(), n.tls_failures.load(),  n.tls_timeouts.load()};
}

size_t Server::max_connections() const { return impl_->cap; }

}  // namespace weft::net::http
