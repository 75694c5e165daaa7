#pragma once
// The agent's HTTP conversation with the controller: one keep-alive connection to the replica in
// use, the bearer token on every request, and the move to the next replica (--controller
// URL[,URL...], replicas sharing one store). Used by the control thread only. httplib stays in the
// .cpp: it is the heaviest header the agent has.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/controller_url.hpp"

namespace weft::agent {

// TLS to an https:// controller (docs/controller.md "TLS").
struct ControllerTls {
  std::string ca_file;    // verify the controller's certificate against this CA (PEM); "": the system's CAs
  std::string cert_file;  // a client certificate and its key (mutual TLS); "" for none
  std::string key_file;
};

struct ControllerReply {
  int status = 0;     // HTTP status; 0 when the controller could not be reached
  std::string body;   // the answer's body
  std::string error;  // why it could not be reached (status 0)
};

class ControllerClient {
 public:
  ControllerClient();
  ~ControllerClient();
  ControllerClient(const ControllerClient&) = delete;
  ControllerClient& operator=(const ControllerClient&) = delete;

  // `urls` non-empty; connects to the first. https:// URLs verify the controller (`tls`): a
  // certificate that does not verify is refused, and the reply's error says why.
  void open(std::vector<ControllerUrl> urls, const std::string& token, ControllerTls tls = {});
  const ControllerUrl& current() const { return urls_[index_]; }

  ControllerReply post(const std::string& path, const std::string& body, std::string_view content_type);
  ControllerReply get(const std::string& path);

  // Moves on to the next replica after an unreachable one or a 503 (its store is down); false
  // when there is only one. The new replica may not know this agent yet: the caller registers.
  bool next_replica();

 private:
  void connect();

  struct Http;
  std::unique_ptr<Http> http_;
  std::vector<ControllerUrl> urls_;
  size_t index_ = 0;
  ControllerTls tls_;
};

}  // namespace weft::agent
