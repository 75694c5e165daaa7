#pragma once
// An event-driven HTTP/1.1 server: one epoll thread owns every connection and does all the
// reading, parsing and writing; handlers run on small worker pools ("lanes"), so the number of
// open connections costs memory only, never threads, and a slow handler (a large render) holds
// up neither the reads of other connections nor the handlers of other lanes.
//
// Per connection: keep-alive and pipelining (requests are answered one at a time, in order; the
// next is parsed only when the previous answer is written), Content-Length bodies (parser.hpp),
// "Expect: 100-continue". Protection: limits on the head and body size checked before the body
// is read; a route's head check (a token) also runs before the body is read; the whole head must
// arrive within header_timeout (slowloris) and the whole request within request_timeout; idle
// keep-alive connections close after idle_timeout; at most max_connections_per_address per client
// address; at max_connections the connection idle the longest is closed to make room (a new one is
// refused with 503 only when none is idle). An error answered before the body is read closes the
// connection after a short lingering drain, so the client still gets to read the status.
//
// TLS (ServerOptions::tls, tls.hpp): every listener speaks HTTPS. The handshake is driven on the
// event loop like the reads and writes (nonblocking SSL_do_handshake/SSL_read/SSL_write, a
// WANT_READ or WANT_WRITE becoming the epoll interest), and it counts as part of the first
// request's head: a handshake that has not finished within header_timeout is closed, as a slow
// head is. A handshaking connection is not idle, so it is never the one shed to make room.
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "net/address.hpp"
#include "net/http/parser.hpp"
#include "net/http/router.hpp"
#include "net/http/tls.hpp"

namespace weft::net::http {

// Where one handled request spent its time, in steady-clock nanoseconds (ServerOptions::on_request):
// reading (its first byte to its last body byte: the client's sending and the event loop's turn),
// queued for a worker of its lane, in the handler, and back to the event loop until its answer
// starts going out. A long tail in `queue` means the lane's workers are busy (or not scheduled);
// in `handler`, the handler itself; in `reply`, the event loop is.
struct RequestTiming {
  std::string_view method;
  std::string_view pattern;  // the route's pattern, e.g. "/api/v1/pairs/*/*/history"
  int status = 0;
  int64_t read_ns = 0, queue_ns = 0, handler_ns = 0, reply_ns = 0;
};

struct ServerOptions {
  Limits limits;
  std::vector<size_t> lane_threads{4};  // worker threads per lane (Route::lane indexes it)
  size_t max_connections = 20000;       // also kept below the process's descriptor limit
  size_t max_connections_per_address = 1024;
  int64_t idle_timeout_ns = 60'000'000'000;     // a keep-alive connection with no request
  int64_t header_timeout_ns = 10'000'000'000;   // from a request's first byte to its last header
  int64_t request_timeout_ns = 60'000'000'000;  // from a request's first byte to its last body byte
  int64_t write_timeout_ns = 30'000'000'000;    // an answer making no progress
  int64_t linger_ns = 2'000'000'000;            // draining an unread body after an early error
  // Fills in the server's own error answers (400, 404, 408, 413, 431, 500, 503...). The default
  // writes the message as text/plain.
  std::function<void(Response&, int status, std::string_view message)> error_response;
  // Called on the event loop for every request a handler answered, as its answer starts going
  // out: it must be quick and must not block (count it, do not log it). May be empty.
  std::function<void(const RequestTiming&)> on_request;
  // HTTPS on every listener when set (tls.hpp); its reload() takes effect for new connections.
  std::shared_ptr<TlsServerContext> tls;
};

struct ServerStats {
  uint64_t open = 0;                    // connections open now
  uint64_t accepted = 0;                // connections accepted in all
  uint64_t requests = 0;                // requests handed to handlers
  uint64_t early_answers = 0;           // answered before the body was read (errors, head checks)
  uint64_t shed_idle = 0;               // idle connections closed to make room at max_connections
  uint64_t refused_address = 0;         // refused: max_connections_per_address
  uint64_t refused_full = 0;            // refused: max_connections and none idle
  uint64_t timed_out_idle = 0;          // closed after idle_timeout
  uint64_t timed_out_request = 0;       // closed after header_timeout/request_timeout/write_timeout
  uint64_t tls_handshakes = 0;          // TLS handshakes completed
  uint64_t tls_handshake_failures = 0;  // refused by TLS (no shared version, bad certificate, not TLS...)
  uint64_t tls_handshake_timeouts = 0;  // not finished within header_timeout (also in timed_out_request)
};

class Server {
 public:
  Server(Router router, ServerOptions options);
  ~Server();  // stops
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and listens (before start). Returns the port bound (useful with port 0).
  Result<uint16_t> listen(const SocketAddress& addr, int backlog = 4096);
  // Starts the event loop and the workers.
  Status start();
  // Closes every connection and joins the threads; requests being handled are finished first.
  void stop();
  ServerStats stats() const;
  // The connection cap in force (max_connections, lowered to fit the descriptor limit).
  size_t max_connections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::net::http
