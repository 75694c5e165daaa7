#pragma once
// TLS to Redis (rediss://, rediss-cluster://) for a hiredis that has none: Debian 12 ships
// hiredis 0.14, whose TLS support came only in 1.0. Each connection to a node is a TLS client
// connection (verified against a CA, optionally with a client certificate for Redis's
// tls-auth-clients) carried to hiredis through a socketpair: hiredis talks plain RESP on its end
// (redisConnectFd), and a small pump thread per connection moves bytes between that end and TLS.
// The pump never blocks on one direction while the other is full (non-blocking both sides,
// bounded buffers), so a pipelined MULTI/EXEC cannot deadlock it. When either side closes, the
// other sees end-of-file: hiredis's error on a lost connection is the same as over plain TCP, and
// the store's reconnect path needs nothing new.
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/event_fd.hpp"
#include "base/fd.hpp"
#include "base/result.hpp"

struct ssl_ctx_st;
struct ssl_st;

namespace weft::controller::redis {

struct TlsFiles {
  std::string ca;    // PEM CA(s) the server's certificate must chain to; "" = the system's store
  std::string cert;  // PEM client certificate (Redis tls-auth-clients); "" = none
  std::string key;   // its private key
};

// One client context for every connection of a store (loaded once; errors name the file).
class TlsClientContext {
 public:
  static Result<std::shared_ptr<TlsClientContext>> load(const TlsFiles& files);
  ~TlsClientContext();
  ssl_ctx_st* get() const { return ctx_; }

 private:
  TlsClientContext() = default;
  ssl_ctx_st* ctx_ = nullptr;
};

class TlsTunnel {
 public:
  // Connects to host:port, completes the handshake (server certificate checked against the CA
  // and the host name or IP address) within `timeout`, and starts the pump. The returned tunnel's
  // plain end is for hiredis: take it with release_plain_fd().
  static Result<std::unique_ptr<TlsTunnel>> open(std::shared_ptr<TlsClientContext> ctx,
                                                 const std::string& host, int port,
                                                 std::chrono::milliseconds timeout);
  // Stops the pump and closes the TLS connection (hiredis's end, if still open, then reads EOF).
  ~TlsTunnel();
  TlsTunnel(const TlsTunnel&) = delete;
  TlsTunnel& operator=(const TlsTunnel&) = delete;

  int release_plain_fd() { return plain_.release(); }

  // Why the TLS side ended, once it has (e.g. the server's alert "certificate required"); "" while
  // it runs or when hiredis closed first. Set before hiredis can read EOF.
  std::string failure() const;

 private:
  TlsTunnel() = default;
  void pump();
  void pump_until_closed();
  void record_failure(std::string why, bool answered);

  std::shared_ptr<TlsClientContext> ctx_;
  ssl_st* ssl_ = nullptr;
  Fd tcp_;    // the TLS connection's socket
  Fd inner_;  // the pump's end of the socketpair
  Fd plain_;  // hiredis's end, until released
  EventFd stop_;
  mutable std::mutex mu_;
  std::string failure_;
  std::thread thread_;
};

}  // namespace weft::controller::redis
