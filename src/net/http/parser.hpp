#pragma once
// Parsing an HTTP/1.1 request head (request line and headers) from the bytes received so far.
// It is kept apart from the server so that it can be unit-tested and fuzzed alone (fuzz/).
//
// What it accepts: "METHOD SP origin-form-target SP HTTP/1.x CRLF", then "name: value" lines and
// an empty line; bare LF line ends are accepted too (as most servers do). It refuses, with the
// status the server sends back: obsolete line folding, control characters, a malformed or
// repeated-and-different Content-Length (request smuggling), any Transfer-Encoding (501: bodies
// must carry a Content-Length), a head larger than max_head_bytes (431) and a body announced
// larger than max_body_bytes (413) -- the last two before any of the body is read.
#include <cstddef>
#include <string>
#include <string_view>

#include "net/http/message.hpp"

namespace weft::net::http {

struct Limits {
  size_t max_head_bytes = 16 * 1024;  // request line + headers
  size_t max_headers = 100;
  size_t max_body_bytes = 64u << 20;
};

struct HeadResult {
  enum class Kind { incomplete, complete, error } kind = Kind::incomplete;
  size_t head_bytes = 0;  // complete: bytes of the head, including the empty line
  int status = 0;         // error: the HTTP status to answer with
  std::string message;    // error: why
};

// Parses the head at the start of `buf` into `req` (method, target, path, query, params, headers,
// content_length, keep_alive, expect_continue). `req` is only meaningful when complete.
HeadResult parse_head(std::string_view buf, const Limits& limits, Request& req);

// %XX decoding; with plus_is_space also '+' -> ' ' (query strings). False on a bad escape.
bool percent_decode(std::string_view in, std::string& out, bool plus_is_space);

// "a=1&b=x%20y" -> {{"a","1"},{"b","x y"}}; pairs with a bad escape are kept raw.
void parse_query(std::string_view query, std::vector<std::pair<std::string, std::string>>& out);

}  // namespace weft::net::http
