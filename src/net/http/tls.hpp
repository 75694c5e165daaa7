#pragma once
// TLS for the event-driven HTTP server (server.hpp): an OpenSSL server context loaded from
// PEM files, TLS 1.2 at least (1.3 preferred by OpenSSL's own order), optionally asking clients
// for a certificate signed by a given CA (mutual TLS). reload() reads the files again and swaps the
// context in for new connections only: an SSL object keeps a reference to the context it was made
// from, so connections already open carry on with the old certificate until they close.
#include <memory>
#include <mutex>
#include <string>

#include "base/result.hpp"

struct ssl_ctx_st;
struct ssl_st;

namespace weft::net::http {

struct TlsServerFiles {
  std::string cert;       // PEM: the server's certificate, then any intermediates
  std::string key;        // PEM: its private key
  std::string client_ca;  // PEM: CA(s) that sign client certificates; "" = no client certificates
};

class TlsServerContext {
 public:
  // Reads and checks the files (the key must match the certificate); a clear error otherwise.
  static Result<std::shared_ptr<TlsServerContext>> load(TlsServerFiles files);

  // Reads the files again; on an error the context in use stays (and the error says why).
  Status reload();

  // A new server-side SSL object from the current context (nullptr: out of memory).
  ssl_st* new_connection() const;

  // "subject, SHA-256 fingerprint, not after" of the certificate in use, for the log.
  std::string describe() const;
  bool verifies_clients() const { return !files_.client_ca.empty(); }
  const TlsServerFiles& files() const { return files_; }

  ~TlsServerContext();

 private:
  explicit TlsServerContext(TlsServerFiles files) : files_(std::move(files)) {}
  TlsServerFiles files_;
  mutable std::mutex mu_;
  ssl_ctx_st* ctx_ = nullptr;  // owned (SSL_CTX_free); an SSL made from it holds its own reference
  std::string describe_;
};

// The name a verified client certificate gives its holder: its first DNS subjectAltName, else its
// subject's common name; "" when the peer sent no certificate.
std::string tls_peer_name(ssl_st* ssl);

// What OpenSSL's error queue says (and empties it), e.g. "error:0A000086:SSL routines::certificate
// verify failed"; `fallback` when the queue is empty.
std::string tls_error_text(std::string_view fallback = "unknown TLS error");

}  // namespace weft::net::http
