#include "controller/config.hpp"

#include <gtest/gtest.h>

using namespace weft::controller;

TEST(Config, ParsesAFullExample) {
  auto c = parse_config(R"(
listen: [127.0.0.1:18080, "10.0.0.1:18080"]
plain_http: true
agent_secret: 0123456789abcdef-secret
admin_tokens: [admin-token-1]
read_tokens: [read-token-1]
store: sqlite:/tmp/x.db
retention: 2d
window: 5s
agent_down_after: 20s
protocols:
  udp: {interval: 50ms, timeout: 1s}
  tcp:
groups:
  - name: rack1
    protocols: [udp, tcp]
    members: ["r1-*"]
arrows:
  - name: web-db
    protocols: [udp]
    from: web-*
    to: [db-1, db-2]
)",
                        "t.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->listen.size(), 2u);
  EXPECT_EQ(c->agent_secrets, std::vector<std::string>{"0123456789abcdef-secret"});
  EXPECT_EQ(c->retention_ns, 2LL * 86400 * 1'000'000'000);
  EXPECT_EQ(c->window_ns, 5'000'000'000);
  ASSERT_NE(c->plan(weft::proto::Protocol::udp), nullptr);
  EXPECT_EQ(c->plan(weft::proto::Protocol::udp)->interval_ns, 50'000'000);
  ASSERT_NE(c->plan(weft::proto::Protocol::tcp), nullptr);
  ASSERT_EQ(c->groups.size(), 1u);
  EXPECT_EQ(c->groups[0].members[0], "r1-*");
  ASSERT_EQ(c->arrows.size(), 1u);
  EXPECT_EQ(c->arrows[0].from, std::vector<std::string>{"web-*"});
  EXPECT_EQ(c->arrows[0].to.size(), 2u);
}

TEST(Config, ErrorNamesFileLineAndField) {
  auto c = parse_config("window: 10s\ngroups:\n  - name: g\n    protocols: [udp, udpp]\n    members: ['*']\n",
                        "weft.yaml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("weft.yaml:4:"), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("groups[0].protocols[1]"), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("udpp"), std::string::npos) << c.error().message;
}

TEST(Config, UnknownKeyIsAnError) {
  auto c = parse_config("listen: 127.0.0.1:1\nwindwo: 10s\n", "w.yaml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("w.yaml:2:1"), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("windwo"), std::string::npos) << c.error().message;
}

TEST(Config, BadValues) {
  for (const char* bad :
       {"window: 10 seconds\n", "window: 10\n", "listen: nohostport\n", "tokens: [short]\n",
        "store: mysql://x\n", "groups: {a: 1}\n", "groups:\n  - name: a\n    protocols: [udp]\n",
        "protocols:\n  udp: {timeout: 20s}\n", "http_threads: -3\n",
        "groups:\n  - {name: a, protocols: [udp], members: [x]}\n  - {name: a, protocols: [udp], members: "
        "[y]}\n"}) {
    auto c = parse_config(bad, "b.yaml");
    EXPECT_FALSE(c) << "accepted: " << bad;
    if (!c) {
      EXPECT_NE(c.error().message.find("b.yaml"), std::string::npos) << c.error().message;
    }
  }
}

// How long start-up waits for an unreachable store: no limit unless given; a duration, 0s allowed.
TEST(Config, StoreStartupTimeout) {
  auto d = parse_config("listen: 127.0.0.1:1\n", "s.yaml");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->store_startup_timeout_ns, 0);
  auto c = parse_config("listen: 127.0.0.1:1\nstore_startup_timeout: 5m\n", "s.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->store_startup_timeout_ns, 300LL * 1'000'000'000);
  EXPECT_FALSE(parse_config("listen: 127.0.0.1:1\nstore_startup_timeout: soon\n", "s.yaml"));
}

// listen takes HOST:PORT as every other HOST:PORT is read (net::split_host_port): IPv6 in brackets,
// a port 1-65535 required.
TEST(Config, ListenIsHostPort) {
  for (const char* ok :
       {"listen: 127.0.0.1:8080\n", "listen: \"[::1]:8080\"\n", "listen: ctrl.example:65535\n"}) {
    // Beyond loopback the credential rules apply (auth_test.cpp); open here, the listen syntax is the point.
    auto c =
        parse_config(std::string(ok) + "open_agents: true\nopen_read: true\nplain_http: true\n", "l.yaml");
    EXPECT_TRUE(c) << ok << ": " << (c ? "" : c.error().message);
  }
  for (const char* bad :
       {"listen: 127.0.0.1\n", "listen: 127.0.0.1:0\n", "listen: 127.0.0.1:65536\n", "listen: \":8080\"\n",
        "listen: \"[::1]\"\n", "listen: \"[::1:8080\"\n", "listen: 127.0.0.1:80x\n"})
    EXPECT_FALSE(parse_config(bad, "l.yaml")) << "accepted: " << bad;
}

// Issue 14: a key given twice was accepted and the first won, so a later correction in a long file
// did nothing. Both places are named, at the top level and inside nested mappings.
TEST(Config, KeyGivenTwiceIsAnError) {
  auto c = parse_config("window: 10s\nretention: 1d\nwindow: 30s\n", "d.yaml");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message, "d.yaml:3:1: key 'window' is given twice (first on line 1)");
  c = parse_config("groups:\n  - name: a\n    protocols: [udp]\n    members: ['*']\n    name: b\n", "n.yaml");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message, "n.yaml:5:5: key 'name' is given twice (first on line 2)");
  c = parse_config("protocols:\n  udp: {interval: 10ms, interval: 20ms}\n", "f.yaml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("f.yaml:2:"), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("'interval' is given twice"), std::string::npos) << c.error().message;
  // The same key in two different mappings is fine.
  EXPECT_TRUE(
      parse_config("groups:\n  - {name: a, protocols: [udp], members: [x]}\n"
                   "  - {name: b, protocols: [udp], members: [y]}\n",
                   "ok.yaml"));
}

TEST(Config, YamlSyntaxErrorHasALine) {
  auto c = parse_config("listen: [127.0.0.1:1\ngroups: x\n", "s.yaml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("s.yaml:"), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("syntax"), std::string::npos) << c.error().message;
}

TEST(Config, MissingFileSaysSo) {
  auto c = load_config("/nonexistent/weft.yaml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("/nonexistent/weft.yaml"), std::string::npos);
}

TEST(Config, Glob) {
  EXPECT_TRUE(glob_match("*", "anything"));
  EXPECT_TRUE(glob_match("rack1-*", "rack1-h07"));
  EXPECT_FALSE(glob_match("rack1-*", "rack2-h07"));
  EXPECT_TRUE(glob_match("h?", "h1"));
  EXPECT_FALSE(glob_match("h?", "h10"));
  EXPECT_TRUE(glob_match("*-db-*", "eu-db-3"));
}

TEST(Config, HttpServerLimits) {
  auto d = parse_config("listen: 127.0.0.1:1\n", "t.yaml");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->http_api_threads, 4u);
  EXPECT_EQ(d->http_max_connections, 20000u);
  EXPECT_EQ(d->http_max_connections_per_address, 1024u);
  EXPECT_EQ(d->http_idle_timeout_ns, 60'000'000'000);
  EXPECT_EQ(d->http_header_timeout_ns, 10'000'000'000);
  EXPECT_EQ(d->max_header_bytes, 16384u);
  auto c = parse_config(
      "listen: 127.0.0.1:1\nhttp_api_threads: 2\nhttp_max_connections: 500\n"
      "http_max_connections_per_address: 7\nhttp_idle_timeout: 5s\nhttp_header_timeout: 1500ms\n"
      "http_request_timeout: 20s\nmax_header_bytes: 4096\n",
      "t.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->http_api_threads, 2u);
  EXPECT_EQ(c->http_max_connections, 500u);
  EXPECT_EQ(c->http_max_connections_per_address, 7u);
  EXPECT_EQ(c->http_idle_timeout_ns, 5'000'000'000);
  EXPECT_EQ(c->http_header_timeout_ns, 1'500'000'000);
  EXPECT_EQ(c->http_request_timeout_ns, 20'000'000'000);
  EXPECT_EQ(c->max_header_bytes, 4096u);
  for (const char* bad : {"http_max_connections: 3\n", "http_max_connections_per_address: 0\n",
                          "http_header_timeout: 1ms\n", "max_header_bytes: 10\n", "http_api_threads: 0\n"}) {
    auto r = parse_config(std::string("listen: 127.0.0.1:1\n") + bad, "t.yaml");
    EXPECT_FALSE(r) << bad;
  }
}

// TLS and remote write credentials (docs/controller.md "TLS", docs/metrics.md): files relative to
// the config's folder, keys that go together, and what a non-loopback plain listener needs.
TEST(Config, TlsAndRemoteWriteCredentials) {
  auto c = parse_config(
      "tls_cert: tls/c.pem\ntls_key: /abs/k.pem\ntls_client_ca: ca.pem\n"
      "remote_write: https://mimir:443/api/v1/push\nremote_write_ca: rw-ca.pem\n",
      "/etc/weft/weft.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->tls_cert, "/etc/weft/tls/c.pem");
  EXPECT_EQ(c->tls_key, "/abs/k.pem");
  EXPECT_EQ(c->tls_client_ca, "/etc/weft/ca.pem");
  EXPECT_EQ(c->remote_write_ca, "/etc/weft/rw-ca.pem");
  auto error_of = [](const std::string& yaml) {
    auto r = parse_config(yaml, "e.yaml");
    return r ? std::string("accepted") : r.error().message;
  };
  EXPECT_NE(error_of("tls_cert: c.pem\n").find("tls_cert and tls_key go together"), std::string::npos);
  EXPECT_NE(error_of("tls_client_ca: ca.pem\n").find("need TLS"), std::string::npos);
  EXPECT_NE(error_of("remote_write: ftp://x/y\n").find("http(s)://"), std::string::npos);
  EXPECT_NE(
      error_of("remote_write_password_file: /nonexistent/pw\nremote_write_username: u\n").find("cannot read"),
      std::string::npos);
  EXPECT_NE(error_of("remote_write_username: u\n").find("remote_write_password_file"), std::string::npos);
  // Beyond loopback: TLS, or plain HTTP said explicitly.
  const std::string open = "listen: 0.0.0.0:8080\nopen_agents: true\nopen_read: true\n";
  EXPECT_NE(error_of(open).find("plain_http: true"), std::string::npos);
  EXPECT_EQ(error_of(open + "plain_http: true\n"), "accepted");
  EXPECT_EQ(error_of(open + "tls_cert: c.pem\ntls_key: k.pem\n"), "accepted");
}
