#pragma once
// An HTTP/1.1 request as the server hands it to a handler, and the response the handler fills in.
// Header names are kept lower-case (HTTP header names are case-insensitive); values as sent.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weft::net::http {

struct Request {
  std::string method;                                        // "GET", "POST", ...
  std::string target;                                        // as sent: "/api/v1/mesh?protocol=udp"
  std::string path;                                          // percent-decoded path, without the query
  std::string query;                                         // raw text after '?', "" when none
  int minor_version = 1;                                     // HTTP/1.<minor>
  std::vector<std::pair<std::string, std::string>> headers;  // lower-case names
  std::vector<std::pair<std::string, std::string>> params;   // decoded query parameters, in order
  std::vector<std::string> matches;  // what the route's '*' segments matched (router.hpp)
  std::string body;
  std::string peer;  // the client's IP address, as text
  // With mutual TLS: the name in the client's verified certificate (tls.hpp tls_peer_name); else "".
  std::string tls_client;
  size_t content_length = 0;
  bool keep_alive = true;        // HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with keep-alive
  bool expect_continue = false;  // "Expect: 100-continue"

  // The first header with this (lower-case) name, or "" when absent.
  std::string_view header(std::string_view lower_name) const;
  bool has_param(std::string_view name) const;
  // The first value of a query parameter, or "" when absent.
  std::string param(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string content_type;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers, sent as given
  std::string body;
  bool close = false;  // close the connection after this response

  void set(int st, std::string b, std::string type) {
    status = st;
    body = std::move(b);
    content_type = std::move(type);
  }
  void set_header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
  }
};

// "OK", "Not Found", ... ("Unknown" for a code it does not know).
std::string_view reason_phrase(int status);

}  // namespace weft::net::http
