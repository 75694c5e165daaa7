#include "sim/bench_tls.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cstdio>
#include <memory>

namespace weft::sim {

Status write_bench_certificate(const std::string& dir) {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(X509_new(), X509_free);
  if (!key || !cert) return fail("bench TLS: cannot make a key");
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("127.0.0.1"),
                             -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) return fail("bench TLS: cannot sign");
  auto write = [&](const std::string& path, bool is_key) -> Status {
    FILE* f = std::fopen(path.c_str(), "w");
    if (!f) return fail("bench TLS: cannot write {}", path);
    int ok = is_key ? PEM_write_PrivateKey(f, key.get(), nullptr, nullptr, 0, nullptr, nullptr)
                    : PEM_write_X509(f, cert.get());
    std::fclose(f);
    if (ok != 1) return fail("bench TLS: cannot write {}", path);
    return {};
  };
  if (auto st = write(dir + "/bench-cert.pem", false); !st) return st;
  return write(dir + "/bench-key.pem", true);
}

ssl_ctx_st* bench_tls_client_context() {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) return nullptr;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  return ctx;
}

}  // namespace weft::sim
