// The controller URL as agents and `weft mesh` take it (one parser for both).
#include "agent/controller_url.hpp"

#include <gtest/gtest.h>

namespace {

using weft::agent::parse_controller_url;

TEST(ControllerUrl, HostPortAndPath) {
  auto u = parse_controller_url("http://10.0.0.1:8080/api/v1");
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->host, "10.0.0.1");
  EXPECT_EQ(u->port, 8080);
  u = parse_controller_url("ctrl.example");
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->host, "ctrl.example");
  EXPECT_EQ(u->port, 80);
}

TEST(ControllerUrl, BracketedIpv6LosesItsBrackets) {
  auto u = parse_controller_url("http://[::1]:9090");
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 9090);
  u = parse_controller_url("http://[fd00::5]");
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->host, "fd00::5");
  EXPECT_EQ(u->port, 80);
}

TEST(ControllerUrl, ClearErrors) {
  auto u = parse_controller_url("ftp://ctrl:8443");
  ASSERT_FALSE(u);
  EXPECT_NE(u.error().message.find("only http:// and https://"), std::string::npos) << u.error().message;
  for (const char* bad :
       {"http://ctrl:0", "http://ctrl:70000", "http://ctrl:80x", "http://:8080", "http://"}) {
    auto r = parse_controller_url(bad);
    EXPECT_FALSE(r) << bad;
    if (!r) {
      EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
    }
  }
}

}  // namespace

TEST(ControllerUrl, SeveralReplicas) {
  auto l = weft::agent::parse_controller_urls("http://10.0.0.1:8080,http://[::1]:9090,ctrl3");
  ASSERT_TRUE(l) << l.error().message;
  ASSERT_EQ(l->size(), 3u);
  EXPECT_EQ((*l)[0].host, "10.0.0.1");
  EXPECT_EQ((*l)[1].host, "::1");
  EXPECT_EQ((*l)[1].port, 9090);
  EXPECT_EQ((*l)[2].host, "ctrl3");
  EXPECT_EQ((*l)[2].port, 80);
  EXPECT_EQ(weft::agent::parse_controller_urls("http://a:1")->size(), 1u);
  EXPECT_FALSE(weft::agent::parse_controller_urls("http://a:1,"));
  // Each replica's scheme is its own (an HTTPS controller behind a plain-HTTP one on loopback).
  auto mixed = weft::agent::parse_controller_urls("http://a:1,https://b:2");
  ASSERT_TRUE(mixed) << mixed.error().message;
  EXPECT_FALSE((*mixed)[0].tls);
  EXPECT_TRUE((*mixed)[1].tls);
  EXPECT_FALSE(weft::agent::parse_controller_urls("http://a:1,ftp://b:2"));
}

TEST(ControllerUrl, HttpsIsTlsOnPort443ByDefault) {
  auto u = weft::agent::parse_controller_url("https://ctrl");
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->scheme_host_port(), "https://ctrl:443");
  u = weft::agent::parse_controller_url("https://[fd00::5]:8443");
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->scheme_host_port(), "https://[fd00::5]:8443");
}
