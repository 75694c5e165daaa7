#include "net/http/router.hpp"

namespace weft::net::http {
namespace {

std::vector<std::string> split(std::string_view path) {
  std::vector<std::string> out;
  if (path.starts_with('/')) path.remove_prefix(1);
  while (true) {
    auto slash = path.find('/');
    out.emplace_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

}  // namespace

bool match_path(const std::vector<std::string>& segments, std::string_view path,
                std::vector<std::string>& matches) {
  matches.clear();
  if (!path.starts_with('/')) return false;
  path.remove_prefix(1);
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string& s = segments[i];
    if (s == "**" && i + 1 == segments.size()) {
      if (path.empty()) return false;
      matches.emplace_back(path);
      return true;
    }
    auto slash = path.find('/');
    std::string_view seg = path.substr(0, slash);
    bool last = i + 1 == segments.size();
    if (last != (slash == std::string_view::npos)) return false;
    if (s == "*") {
      if (seg.empty()) return false;
      matches.emplace_back(seg);
    } else if (seg != s) {
      return false;
    }
    if (!last) path.remove_prefix(slash + 1);
  }
  return true;
}

Router& Router::add(std::string method, std::string pattern, Handler handler, size_t lane, HeadCheck check) {
  Route r{std::move(method), std::move(pattern), std::move(handler), std::move(check), lane, {}};
  r.segments = split(r.pattern);
  routes_.push_back(std::move(r));
  return *this;
}

const Route* Router::match(Request& req, bool* path_known) const {
  std::vector<std::string> m;
  if (path_known) *path_known = false;
  std::string_view method = req.method == "HEAD" ? std::string_view("GET") : std::string_view(req.method);
  for (const auto& r : routes_) {
    if (!match_path(r.segments, req.path, m)) continue;
    if (r.method != method) {
      if (path_known) *path_known = true;
      continue;
    }
    req.matches = std::move(m);
    return &r;
  }
  return nullptr;
}

size_t Router::lanes() const {
  size_t n = 1;
  for (const auto& r : routes_) n = std::max(n, r.lane + 1);
  return n;
}

}  // namespace weft::net::http
