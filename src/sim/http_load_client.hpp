#pragma once
// A minimal HTTP/1.1 keep-alive client for `weft bench ingest`: it sends requests that were built
// completely (request line, headers and body in one buffer) before the clock started, in one
// send() each, and reads just the status and body of the answer. The benchmark's client shares
// the two cores with the controller it measures, so its own cost per request has to be small
// (cpp-httplib's client copies the body, writes headers and body separately and polls before
// every read).
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.hpp"

struct ssl_ctx_st;
struct ssl_st;

namespace weft::sim {

// "POST PATH HTTP/1.1" with Host, Content-Type, Content-Length and keep-alive, then the body.
// `authorization`: the Authorization header's value ("Bearer TOKEN"), or "" for none.
std::string build_post_request(std::string_view path, std::string_view content_type, std::string_view body,
                               std::string_view authorization = {});

class HttpLoadConnection {
 public:
  HttpLoadConnection() = default;
  ~HttpLoadConnection();
  HttpLoadConnection(const HttpLoadConnection&) = delete;
  HttpLoadConnection& operator=(const HttpLoadConnection&) = delete;

  // `tls`: speak TLS over the connection (a client context, bench_tls.hpp); nullptr: plain.
  Status connect_loopback(uint16_t port, ssl_ctx_st* tls = nullptr);

  struct Answer {
    int status = 0;
    std::string body;
  };
  // Sends one prebuilt request and reads its answer (which must carry Content-Length, as the
  // controller's do). Any error closes the connection; the next call reconnects.
  Result<Answer> exchange(std::string_view request);

 private:
  Status read_more();
  void close_connection();
  int fd_ = -1;
  uint16_t port_ = 0;
  ssl_ctx_st* tls_ = nullptr;
  ssl_st* ssl_ = nullptr;
  std::string in_;  // bytes received and not yet consumed
};

}  // namespace weft::sim
