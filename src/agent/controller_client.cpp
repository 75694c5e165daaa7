#include "agent/controller_client.hpp"

#include <httplib.h>

#include "base/log.hpp"
#include "base/signals.hpp"

namespace weft::agent {

struct ControllerClient::Http {
  std::unique_ptr<httplib::Client> client;
  httplib::Headers headers;
};

namespace {

ControllerReply reply_of(const httplib::Result& res) {
  if (!res) return {0, {}, httplib::to_string(res.error())};
  return {res->status, res->body, {}};
}

}  // namespace

ControllerClient::ControllerClient() : http_(std::make_unique<Http>()) {}
ControllerClient::~ControllerClient() = default;

void ControllerClient::open(std::vector<ControllerUrl> urls, const std::string& token) {
  urls_ = std::move(urls);
  index_ = 0;
  if (!token.empty()) http_->headers.emplace("Authorization", "Bearer " + token);
  connect();
}

void ControllerClient::connect() {
  const auto& url = urls_[index_];
  http_->client = std::make_unique<httplib::Client>(url.host, url.port);
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
  return reply_of(http_->client->Post(path, http_->headers, body, std::string(content_type)));
}

ControllerReply ControllerClient::get(const std::string& path) {
  SigpipeBlock no_sigpipe;  // as in post()
  return reply_of(http_->client->Get(path, http_->headers));
}

bool ControllerClient::next_replica() {
  if (urls_.size() < 2) return false;
  index_ = (index_ + 1) % urls_.size();
  connect();
  log().warn("controller: trying replica {}:{}", current().host, current().port);
  return true;
}

}  // namespace weft::agent
