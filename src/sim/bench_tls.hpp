#pragma once
// TLS for `weft bench ingest --tls`: a throw-away self-signed certificate for the benchmark's
// controller (written to its temp dir, never kept), and a client context for the simulated agents.
// The agents do not verify it (the point is what TLS costs the controller, not a trust chain).
#include <string>

#include "base/result.hpp"

struct ssl_ctx_st;

namespace weft::sim {

// Writes DIR/bench-cert.pem and DIR/bench-key.pem (P-256, CN=127.0.0.1, one day).
Status write_bench_certificate(const std::string& dir);

// A TLS client context (TLS 1.2 at least; no verification); nullptr when OpenSSL cannot make one.
ssl_ctx_st* bench_tls_client_context();

}  // namespace weft::sim
