#include "net/http/tls.hpp"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace weft::net::http {
namespace {

// TLS 1.2 with forward secrecy and AEAD only (TLS 1.3's suites are all of that kind already).
constexpr const char* kTls12Ciphers = "ECDHE+AESGCM:ECDHE+CHACHA20";
constexpr unsigned char kSessionIdContext[] = "weft";

std::string describe_cert(X509* cert) {
  char subject[256] = "?";
  X509_NAME_oneline(X509_get_subject_name(cert), subject, sizeof subject);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  std::string fp;
  if (X509_digest(cert, EVP_sha256(), md, &n) == 1)
    for (unsigned i = 0; i < n; ++i) fp += fmt::format("{}{:02X}", i ? ":" : "", md[i]);
  std::string not_after = "?";
  if (BIO* b = BIO_new(BIO_s_mem())) {
    if (ASN1_TIME_print(b, X509_get0_notAfter(cert)) == 1) {
      char* data = nullptr;
      long len = BIO_get_mem_data(b, &data);
      not_after.assign(data, static_cast<size_t>(len));
    }
    BIO_free(b);
  }
  return fmt::format("{} (SHA-256 {}, valid until {})", subject, fp, not_after);
}

// A fresh context from the files, or why not.
Result<SSL_CTX*> build_context(const TlsServerFiles& f, std::string& description) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) return fail("TLS: {}", tls_error_text("cannot create a context"));
  auto bad = [&](std::string what) -> Result<SSL_CTX*> {
    SSL_CTX_free(ctx);
    return fail("TLS: {}: {}", what, tls_error_text());
  };
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // No renegotiation (a client could make the server redo handshakes at will), no compression.
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // The event loop retries a write with the same bytes but maybe a moved buffer; partial writes
  // let it count progress per record; idle connections give their 34 KB of buffers back.
  SSL_CTX_set_mode(
      ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
  // Read-ahead: one recv() takes a whole request (and whatever follows it) instead of one for the
  // 5-byte record header, one for the record and one more that finds the socket empty; the server
  // reads on while SSL_has_pending() says bytes are left in OpenSSL's buffer.
  SSL_CTX_set_read_ahead(ctx, 1);
  if (SSL_CTX_set_cipher_list(ctx, kTls12Ciphers) != 1) return bad("cipher list");
  if (SSL_CTX_use_certificate_chain_file(ctx, f.cert.c_str()) != 1)
    return bad(fmt::format("certificate {}", f.cert));
  if (SSL_CTX_use_PrivateKey_file(ctx, f.key.c_str(), SSL_FILETYPE_PEM) != 1)
    return bad(fmt::format("private key {}", f.key));
  if (SSL_CTX_check_private_key(ctx) != 1)
    return bad(fmt::format("private key {} does not match certificate {}", f.key, f.cert));
  // Resumed sessions (tickets or the server's cache) skip the certificate work on reconnects.
  SSL_CTX_set_session_id_context(ctx, kSessionIdContext, sizeof kSessionIdContext - 1);
  if (!f.client_ca.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, f.client_ca.c_str(), nullptr) != 1)
      return bad(fmt::format("client CA {}", f.client_ca));
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(f.client_ca.c_str());
    if (!names) return bad(fmt::format("client CA {} names no CA", f.client_ca));
    SSL_CTX_set_client_CA_list(ctx, names);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  description = describe_cert(SSL_CTX_get0_certificate(ctx));
  return ctx;
}

}  // namespace

std::string tls_error_text(std::string_view fallback) {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? std::string(fallback) : out;
}

Result<std::shared_ptr<TlsServerContext>> TlsServerContext::load(TlsServerFiles files) {
  if (files.cert.empty() || files.key.empty()) return fail("TLS: a certificate and a private key are needed");
  std::shared_ptr<TlsServerContext> t(new TlsServerContext(std::move(files)));
  auto ctx = build_context(t->files_, t->describe_);
  if (!ctx) return std::unexpected(ctx.error());
  t->ctx_ = *ctx;
  return t;
}

Status TlsServerContext::reload() {
  std::string description;
  auto ctx = build_context(files_, description);
  if (!ctx) return std::unexpected(ctx.error());
  std::lock_guard lk(mu_);
  SSL_CTX_free(ctx_);  // connections made from it keep their own reference
  ctx_ = *ctx;
  describe_ = std::move(description);
  return {};
}

ssl_st* TlsServerContext::new_connection() const {
  std::lock_guard lk(mu_);
  return SSL_new(ctx_);
}

std::string TlsServerContext::describe() const {
  std::lock_guard lk(mu_);
  return describe_;
}

TlsServerContext::~TlsServerContext() { SSL_CTX_free(ctx_); }

std::string tls_peer_name(ssl_st* ssl) {
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (!cert) return {};
  std::string name;
  if (auto* sans =
          static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr))) {
    for (int i = 0; i < sk_GENERAL_NAME_num(sans) && name.empty(); ++i) {
      const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
      if (g->type == GEN_DNS)
        name.assign(reinterpret_cast<const char*>(ASN1_STRING_get0_data(g->d.dNSName)),
                    static_cast<size_t>(ASN1_STRING_length(g->d.dNSName)));
    }
    GENERAL_NAMES_free(sans);
  }
  if (name.empty()) {
    char cn[256];
    int n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof cn);
    if (n > 0) name.assign(cn, static_cast<size_t>(n));
  }
  return name;
}

}  // namespace weft::net::http
