#include "agent/controller_client.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <openssl/x509.h>

#include "base/log.hpp"
#include "base/signals.hpp"

namespace weft::agent {

struct ControllerClient::Http {
  std::unique_ptr<httplib::Client> client;
  httplib::Headers headers;
};

namespace {

// httplib names a TLS failure in one word ("SSLServerVerification"); say what failed and why.
std::string failure_text(const httplib::Result& res, const httplib::Client& client,
                         const ControllerTls& tls) {
  const std::string ca = tls.ca_file.empty() ? "the system's CAs" : "CA file " + tls.ca_file;
  switch (res.error()) {
    case httplib::Error::SSLServerVerification:
      return fmt::format("TLS: the controller's certificate does not verify against {}: {}", ca,
                         X509_verify_cert_error_string(client.get_openssl_verify_result()));
    case httplib::Error::SSLLoadingCerts:
      return fmt::format("TLS: cannot load {}{}", ca,
                         tls.cert_file.empty() ? "" : " or the client certificate " + tls.cert_file);
    case httplib::Error::SSLConnection:
      return "TLS: the handshake with the controller failed (not TLS, or no version, cipher or client "
             "certificate it accepts)";
    default:
      return httplib::to_string(res.error());
  }
}

ControllerReply reply_of(const httplib::Result& res, const httplib::Client& client,
                         const ControllerTls& tls) {
  if (!res) return {0, {}, failure_text(res, client, tls)};
  return {res->status, res->body, {}};
}

}  // namespace

ControllerClient::ControllerClient() : http_(std::make_unique<Http>()) {}
ControllerClient::~ControllerClient() = default;

void ControllerClient::open(std::vector<ControllerUrl> urls, const std::string& token, ControllerTls tls) {
  urls_ = std::move(urls);
  index_ = 0;
  tls_ = std::move(tls);
  if (!token.empty()) http_->headers.emplace("Authorization", "Bearer " + token);
  connect();
}

void ControllerClient::connect() {
  const auto& url = urls_[index_];
  if (url.tls) {
    http_->client = std::make_unique<httplib::Client>(url.scheme_host_port(), tls_.cert_file, tls_.key_file);
    http_->client->enable_server_certificate_verification(true);
    if (!tls_.ca_file.empty()) http_->client->set_ca_cert_path(tls_.ca_file);
  } else {
    http_->client = std::make_unique<httplib::Client>(url.host, url.port);
  }
  auto& c = *http_->client;
  c.set_connection_timeout(2, 0);
  c.set_read_timeout(10, 0);
  c.set_write_timeout(10, 0);
  c.set_keep_alive(true);
  c.set_tcp_nodelay(true);  // headers and body go out in two writes: no Nagle delay
}

ControllerReply ControllerClient::post(const std::string& path, const std::string& body,
                                       std::string_view content_type) {
  // httplib writes without MSG_NOSIGNAL: a controller that closed this connection (shed under load,
  // restarted) must cost one failed request, not the agent process (SIGPIPE).
  SigpipeBlock no_sigpipe;
  return reply_of(http_->client->Post(path, http_->headers, body, std::string(content_type)), *http_->client,
                  tls_);
}

ControllerReply ControllerClient::get(const std::string& path) {
  SigpipeBlock no_sigpipe;  // as in post()
  return reply_of(http_->client->Get(path, http_->headers), *http_->client, tls_);
}

bool ControllerClient::next_replica() {
  if (urls_.size() < 2) return false;
  index_ = (index_ + 1) % urls_.size();
  connect();
  log().warn("controller: trying replica {}:{}", current().host, current().port);
  return true;
}

}  // namespace weft::agent
