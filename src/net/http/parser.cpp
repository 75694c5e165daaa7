#include "net/http/parser.hpp"

#include <array>
#include <charconv>

namespace weft::net::http {
namespace {

// RFC 9110 token characters (method, header names).
constexpr std::array<bool, 256> kToken = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c)
    t[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  for (char c : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(c)] = true;
  return t;
}();

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!kToken[static_cast<unsigned char>(c)]) return false;
  return true;
}

// Printable ASCII and obs-text (>= 0x80): what a request target may hold (no spaces).
bool is_target(std::string_view s) {
  if (s.empty()) return false;
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7f) return false;
  }
  return true;
}

// A field value: visible characters, spaces and tabs, obs-text. No CR, LF, NUL or other controls.
bool is_field_value(std::string_view s) {
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

HeadResult error(int status, std::string message) {
  HeadResult r;
  r.kind = HeadResult::Kind::error;
  r.status = status;
  r.message = std::move(message);
  return r;
}

// Parses "METHOD SP TARGET SP HTTP/1.x" into req.
HeadResult request_line(std::string_view line, Request& req) {
  auto sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return error(400, "malformed request line");
  auto sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return error(400, "malformed request line");
  std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                   version = line.substr(sp2 + 1);
  if (!is_token(method)) return error(400, "malformed method");
  if (!is_target(target) || target.front() != '/') return error(400, "the request target must be a path");
  if (version.size() != 8 || !version.starts_with("HTTP/") || version[6] != '.')
    return error(400, "malformed HTTP version");
  if (version[5] != '1' || (version[7] != '0' && version[7] != '1'))
    return error(505, "only HTTP/1.0 and HTTP/1.1 are supported");
  req.method = method;
  req.target = target;
  req.minor_version = version[7] - '0';
  req.keep_alive = req.minor_version == 1;
  auto q = target.find('?');
  std::string_view path = target.substr(0, q);
  req.query = q == std::string_view::npos ? std::string() : std::string(target.substr(q + 1));
  if (!percent_decode(path, req.path, false)) return error(400, "bad percent-escape in the path");
  req.params.clear();
  parse_query(req.query, req.params);
  return {};
}

// Applies the headers the server itself acts on.
HeadResult known_header(std::string_view name, std::string_view value, bool& have_length, Request& req) {
  if (name == "content-length") {
    size_t n = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (value.empty() || value.size() > 19 || ec != std::errc{} || p != value.data() + value.size())
      return error(400, "malformed Content-Length");
    // Two different lengths are how requests get smuggled past a proxy: refuse.
    if (have_length && n != req.content_length) return error(400, "conflicting Content-Length headers");
    have_length = true;
    req.content_length = n;
  } else if (name == "transfer-encoding") {
    return error(501, "Transfer-Encoding is not supported: send a Content-Length");
  } else if (name == "connection") {
    std::string_view rest = value;
    while (!rest.empty()) {
      auto comma = rest.find(',');
      std::string_view tok = trim(rest.substr(0, comma));
      if (iequals(tok, "close")) req.keep_alive = false;
      if (iequals(tok, "keep-alive")) req.keep_alive = true;
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  } else if (name == "expect") {
    if (!iequals(value, "100-continue")) return error(417, "only 'Expect: 100-continue' is supported");
    req.expect_continue = true;
  }
  return {};
}

}  // namespace

bool percent_decode(std::string_view in, std::string& out, bool plus_is_space) {
  out.clear();
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      int h = hex(in[i + 1]), l = hex(in[i + 2]);
      if (h < 0 || l < 0) return false;
      out.push_back(static_cast<char>(h * 16 + l));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return true;
}

void parse_query(std::string_view query, std::vector<std::pair<std::string, std::string>>& out) {
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (part.empty()) continue;
    auto eq = part.find('=');
    std::string_view k = part.substr(0, eq), v = eq == std::string_view::npos ? "" : part.substr(eq + 1);
    std::string dk, dv;
    if (!percent_decode(k, dk, true)) dk = k;
    if (!percent_decode(v, dv, true)) dv = v;
    out.emplace_back(std::move(dk), std::move(dv));
  }
}

HeadResult parse_head(std::string_view buf, const Limits& limits, Request& req) {
  size_t pos = 0;
  // Empty lines before the request line are ignored (RFC 9112 2.2), within the head limit.
  while (pos < buf.size() && (buf[pos] == '\r' || buf[pos] == '\n') && pos < limits.max_head_bytes) ++pos;
  bool first = true, have_length = false;
  req.headers.clear();
  req.content_length = 0;
  req.expect_continue = false;
  while (true) {
    size_t nl = buf.find('\n', pos);
    if (nl == std::string_view::npos || nl >= limits.max_head_bytes) {
      if (buf.size() > limits.max_head_bytes || nl != std::string_view::npos)
        return error(431, "request head too large");
      return {};  // incomplete
    }
    std::string_view line = buf.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = nl + 1;
    if (first) {
      if (auto r = request_line(line, req); r.kind == HeadResult::Kind::error) return r;
      first = false;
      continue;
    }
    if (line.empty()) break;
    if (line.front() == ' ' || line.front() == '\t') return error(400, "obsolete header line folding");
    auto colon = line.find(':');
    if (colon == std::string_view::npos) return error(400, "malformed header line");
    std::string_view name = line.substr(0, colon);
    if (!is_token(name)) return error(400, "malformed header name");
    std::string_view value = trim(line.substr(colon + 1));
    if (!is_field_value(value)) return error(400, "control character in a header value");
    if (req.headers.size() >= limits.max_headers) return error(431, "too many headers");
    std::string lname(name);
    for (auto& ch : lname) ch = lower(ch);
    if (auto r = known_header(lname, value, have_length, req); r.kind == HeadResult::Kind::error) return r;
    req.headers.emplace_back(std::move(lname), std::string(value));
  }
  if (req.content_length > limits.max_body_bytes) return error(413, "request body too large");
  HeadResult r;
  r.kind = HeadResult::Kind::complete;
  r.head_bytes = pos;
  return r;
}

}  // namespace weft::net::http
