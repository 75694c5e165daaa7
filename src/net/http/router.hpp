#pragma once
// Routes: (method, path pattern) -> a named handler. A pattern is a path whose segments may be
// "*" (one non-empty segment) or, last, "**" (the non-empty rest, slashes included); what they
// matched goes to Request::matches in order. HEAD requests take the GET routes (the server sends
// no body). A route may also check the request head before its body is read (an access token), so
// that an unwanted body is never buffered, and names the worker lane it runs on (server.hpp).
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "net/http/message.hpp"

namespace weft::net::http {

using Handler = std::function<void(const Request&, Response&)>;
// Runs on the event loop with the head only (req.body is empty): returns false after filling in
// `res` to answer at once. It must be quick and must not block.
using HeadCheck = std::function<bool(const Request&, Response&)>;

struct Route {
  std::string method;
  std::string pattern;
  Handler handler;
  HeadCheck check;                    // may be empty
  size_t lane = 0;                    // index into ServerOptions::lane_threads
  std::vector<std::string> segments;  // the pattern split at '/'
};

class Router {
 public:
  Router& add(std::string method, std::string pattern, Handler handler, size_t lane = 0,
              HeadCheck check = {});
  // The route for req.method and req.path (filling req.matches), or nullptr. `path_known` tells
  // whether some route has this path under another method.
  const Route* match(Request& req, bool* path_known = nullptr) const;
  size_t lanes() const;  // 1 + the highest lane a route names

 private:
  std::vector<Route> routes_;
};

// Whether `path` matches `segments` (Route::segments); captures go to `matches`.
bool match_path(const std::vector<std::string>& segments, std::string_view path,
                std::vector<std::string>& matches);

}  // namespace weft::net::http
