// The HTTP request-head parser (net/http/parser.hpp): what it takes, what it refuses and with
// which status, and that limits apply before any body is read.
#include <gtest/gtest.h>

#include <string>

#include "net/http/parser.hpp"
#include "net/http/router.hpp"

namespace weft::net::http {
namespace {

using Kind = HeadResult::Kind;

HeadResult parse(std::string_view s, Request& req, Limits lim = {}) { return parse_head(s, lim, req); }

TEST(HttpParser, ParsesARequestWithQueryAndHeaders) {
  Request req;
  std::string head =
      "GET /api/v1/pairs/a%2Db/c/history?protocol=udp&since=1.5&x=a+b%21 HTTP/1.1\r\n"
      "Host: h\r\nAuthorization:  Bearer t0k  \r\nX-Empty:\r\n\r\nNEXT";
  auto r = parse(head, req);
  ASSERT_EQ(r.kind, Kind::complete) << r.message;
  EXPECT_EQ(r.head_bytes, head.size() - 4);
  EXPECT_EQ(req.method, "GET");
  EXPECT_EQ(req.path, "/api/v1/pairs/a-b/c/history");
  EXPECT_EQ(req.query, "protocol=udp&since=1.5&x=a+b%21");
  EXPECT_EQ(req.param("protocol"), "udp");
  EXPECT_EQ(req.param("x"), "a b!");
  EXPECT_TRUE(req.has_param("since"));
  EXPECT_FALSE(req.has_param("until"));
  EXPECT_EQ(req.header("authorization"), "Bearer t0k");
  EXPECT_EQ(req.header("x-empty"), "");
  EXPECT_EQ(req.header("host"), "h");
  EXPECT_TRUE(req.keep_alive);
  EXPECT_EQ(req.content_length, 0u);
}

TEST(HttpParser, IncompleteUntilTheEmptyLineArrives) {
  std::string head = "POST /api/v1/report HTTP/1.1\r\nContent-Length: 5\r\n\r\n";
  for (size_t n = 0; n < head.size(); ++n) {
    Request req;
    EXPECT_EQ(parse(head.substr(0, n), req).kind, Kind::incomplete) << n;
  }
  Request req;
  auto r = parse(head, req);
  ASSERT_EQ(r.kind, Kind::complete);
  EXPECT_EQ(req.content_length, 5u);
}

TEST(HttpParser, BareLineFeedsAndLeadingEmptyLinesAreAccepted) {
  Request req;
  auto r = parse("\r\n\nGET /x HTTP/1.0\nConnection: keep-alive\n\n", req);
  ASSERT_EQ(r.kind, Kind::complete) << r.message;
  EXPECT_EQ(req.path, "/x");
  EXPECT_EQ(req.minor_version, 0);
  EXPECT_TRUE(req.keep_alive);
}

TEST(HttpParser, ConnectionHandling) {
  Request a, b, c;
  ASSERT_EQ(parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", a).kind, Kind::complete);
  EXPECT_FALSE(a.keep_alive);
  ASSERT_EQ(parse("GET / HTTP/1.0\r\n\r\n", b).kind, Kind::complete);
  EXPECT_FALSE(b.keep_alive);  // HTTP/1.0 closes unless asked to keep alive
  ASSERT_EQ(parse("GET / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n", c).kind,
            Kind::complete);
  EXPECT_TRUE(c.expect_continue);
}

struct Bad {
  std::string text;
  int status;
};

TEST(HttpParser, RefusesMalformedHeadsWithTheRightStatus) {
  const Bad cases[] = {
      {"GARBAGE\r\n\r\n", 400},
      {"GET\r\n\r\n", 400},
      {"GET  / HTTP/1.1\r\n\r\n", 400},
      {"GET http://x/ HTTP/1.1\r\n\r\n", 400},  // absolute form: not a proxy
      {"GET / HTTP/2.0\r\n\r\n", 505},
      {"GET / HTTX/1.1\r\n\r\n", 400},
      {"G(T / HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400},
      {std::string("GET / HTTP/1.1\r\nA: b\0c\r\n\r\n", 27), 400},
      {"GET /%zz HTTP/1.1\r\n\r\n", 400},
      {"GET /%4 HTTP/1.1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nExpect: something\r\n\r\n", 417},
  };
  for (const auto& c : cases) {
    Request req;
    auto r = parse(c.text, req);
    EXPECT_EQ(r.kind, Kind::error) << c.text;
    EXPECT_EQ(r.status, c.status) << c.text << " -> " << r.message;
    EXPECT_FALSE(r.message.empty());
  }
}

TEST(HttpParser, RepeatedEqualContentLengthIsAccepted) {
  Request req;
  auto r = parse("POST / HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n", req);
  ASSERT_EQ(r.kind, Kind::complete);
  EXPECT_EQ(req.content_length, 5u);
}

TEST(HttpParser, LimitsApplyBeforeTheBody) {
  Limits lim;
  lim.max_head_bytes = 100;
  lim.max_body_bytes = 1000;
  lim.max_headers = 3;
  Request req;
  // A head that has not ended within the limit: 431 without waiting for the rest.
  EXPECT_EQ(parse("GET /" + std::string(200, 'a'), req, lim).status, 431);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nA: " + std::string(120, 'a') + "\r\n\r\n", req, lim).status, 431);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", req, lim).status, 431);
  // Exactly at the limit: fine.
  std::string at = "GET / HTTP/1.1\r\nA: ";
  at += std::string(100 - at.size() - 4, 'a') + "\r\n\r\n";
  ASSERT_EQ(at.size(), 100u);
  EXPECT_EQ(parse(at, req, lim).kind, Kind::complete);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n", req, lim).status, 413);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nContent-Length: 1000\r\n\r\n", req, lim).kind, Kind::complete);
}

TEST(HttpParser, QueryDecoding) {
  std::vector<std::pair<std::string, std::string>> q;
  parse_query("a=1&&b=&c&d=%2&e=%41%42", q);
  ASSERT_EQ(q.size(), 5u);
  EXPECT_EQ(q[0], (std::pair<std::string, std::string>{"a", "1"}));
  EXPECT_EQ(q[1], (std::pair<std::string, std::string>{"b", ""}));
  EXPECT_EQ(q[2], (std::pair<std::string, std::string>{"c", ""}));
  EXPECT_EQ(q[3], (std::pair<std::string, std::string>{"d", "%2"}));  // a bad escape stays raw
  EXPECT_EQ(q[4], (std::pair<std::string, std::string>{"e", "AB"}));
}

TEST(HttpRouter, MatchesSegmentsAndTheRest) {
  Router r;
  int hit = 0;
  r.add("GET", "/api/v1/pairs/*/*/history", [&](const Request&, Response&) { hit = 1; });
  r.add(
      "DELETE", "/api/v1/agents/*", [&](const Request&, Response&) { hit = 2; }, 1);
  r.add("GET", "/assets/**", [&](const Request&, Response&) { hit = 3; });
  r.add("GET", "/", [&](const Request&, Response&) { hit = 4; });
  EXPECT_EQ(r.lanes(), 2u);
  Request q;
  q.method = "GET";
  q.path = "/api/v1/pairs/a/b/history";
  const Route* m = r.match(q);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(q.matches, (std::vector<std::string>{"a", "b"}));
  q.path = "/api/v1/pairs//b/history";
  EXPECT_EQ(r.match(q), nullptr);
  q.path = "/api/v1/pairs/a/b/history/x";
  EXPECT_EQ(r.match(q), nullptr);
  q.path = "/assets/js/app.js";
  ASSERT_NE(r.match(q), nullptr);
  EXPECT_EQ(q.matches, (std::vector<std::string>{"js/app.js"}));
  q.path = "/assets/";
  EXPECT_EQ(r.match(q), nullptr);
  q.path = "/";
  ASSERT_NE(r.match(q), nullptr);
  q.method = "HEAD";  // takes the GET route
  ASSERT_NE(r.match(q), nullptr);
  q.method = "POST";
  q.path = "/api/v1/agents/x";
  bool known = false;
  EXPECT_EQ(r.match(q, &known), nullptr);
  EXPECT_TRUE(known);  // the path exists under another method
  q.method = "DELETE";
  m = r.match(q);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->lane, 1u);
  EXPECT_EQ(q.matches, (std::vector<std::string>{"x"}));
}

}  // namespace
}  // namespace weft::net::http
