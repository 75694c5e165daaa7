// Fuzzes the HTTP request-head parser and the router (net/http): they must never crash or read out
// of bounds, and what they accept must be consistent: a complete head parses the same from
// exactly its own bytes, stays within the limits, and its path is an origin-form path.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "net/http/parser.hpp"
#include "net/http/router.hpp"

#ifndef WEFT_FUZZ_SEEDGEN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace weft::net::http;
  const std::string_view buf(reinterpret_cast<const char*>(data), size);
  Limits lim;
  lim.max_head_bytes = 4096;
  lim.max_headers = 20;
  lim.max_body_bytes = 1 << 20;
  Request req;
  HeadResult r = parse_head(buf, lim, req);
  if (r.kind == HeadResult::Kind::error) {
    if (r.status < 400 || r.status > 599 || r.message.empty()) std::abort();
    return 0;
  }
  if (r.kind == HeadResult::Kind::incomplete) {
    if (size > lim.max_head_bytes) std::abort();  // past the limit is an error, never "wait"
    return 0;
  }
  if (r.head_bytes == 0 || r.head_bytes > size || r.head_bytes > lim.max_head_bytes) std::abort();
  if (req.content_length > lim.max_body_bytes || req.headers.size() > lim.max_headers) std::abort();
  if (req.target.empty() || req.target[0] != '/') std::abort();
  for (const auto& [k, v] : req.headers)
    for (char c : k)
      if (c >= 'A' && c <= 'Z') std::abort();  // names are lower-cased
  Request again;
  HeadResult r2 = parse_head(buf.substr(0, r.head_bytes), lim, again);
  if (r2.kind != HeadResult::Kind::complete || r2.head_bytes != r.head_bytes || again.path != req.path ||
      again.content_length != req.content_length || again.headers != req.headers ||
      again.params != req.params)
    std::abort();
  // Any shorter prefix of the head is not yet complete.
  if (r.head_bytes > 1) {
    Request part;
    if (parse_head(buf.substr(0, r.head_bytes - 1), lim, part).kind == HeadResult::Kind::complete)
      std::abort();
  }
  static Router router = [] {
    Router rt;
    auto nop = [](const Request&, Response&) {};
    rt.add("GET", "/api/v1/pairs/*/*/history", nop);
    rt.add("DELETE", "/api/v1/agents/*", nop);
    rt.add("GET", "/assets/**", nop);
    rt.add("GET", "/", nop);
    return rt;
  }();
  if (const Route* m = router.match(req)) {
    size_t stars = 0;
    for (const auto& s : m->segments) stars += s == "*" || s == "**";
    if (req.matches.size() != stars) std::abort();
    for (const auto& x : req.matches)
      if (x.empty()) std::abort();
  }
  return 0;
}
#endif
