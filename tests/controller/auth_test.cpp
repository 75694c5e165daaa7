// Credentials (controller/auth.hpp): per-agent tokens bound to a name, the roles a header names, and
// the config rules that keep a non-loopback controller from being open by accident.
#include "controller/auth.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "lib/test_util.hpp"

using namespace weft::controller;

namespace {

Config config(const std::string& yaml) {
  auto c = parse_config(yaml, "<auth>");
  EXPECT_TRUE(c) << c.error().message;
  return c ? *c : Config{};
}

std::string error_of(const std::string& yaml) {
  auto c = parse_config(yaml, "<auth>");
  EXPECT_FALSE(c) << "accepted: " << yaml;
  return c ? std::string() : c.error().message;
}

const std::string kSecret = "agent-secret-0123456789";

}  // namespace

TEST(Auth, AgentTokenIsBoundToItsName) {
  Config cfg = config("agent_secret: " + kSecret + "\n");
  const std::string t = agent_token(kSecret, "h1");
  EXPECT_TRUE(t.starts_with("h1."));
  EXPECT_EQ(t.size(), 3u + 64u);
  auto p = identify(cfg, "Bearer " + t);
  EXPECT_EQ(p.role, Role::agent);
  EXPECT_EQ(p.agent, "h1");
  EXPECT_EQ(bound_agent_name("Bearer " + t), "h1");
  // The MAC of h1 under another name, another secret's token, a flipped digit: nobody.
  EXPECT_EQ(identify(cfg, "Bearer h2" + t.substr(2)).role, Role::none);
  EXPECT_EQ(identify(cfg, "Bearer " + agent_token("another-secret-0123456", "h1")).role, Role::none);
  std::string flipped = t;
  flipped.back() = flipped.back() == '0' ? '1' : '0';
  EXPECT_EQ(identify(cfg, "Bearer " + flipped).role, Role::none);
  EXPECT_EQ(identify(cfg, "").role, Role::none);
  // Names may hold dots: the MAC is what follows the last one.
  const std::string dotted = agent_token(kSecret, "rack1.h7");
  EXPECT_EQ(identify(cfg, "Bearer " + dotted).agent, "rack1.h7");
}

TEST(Auth, EverySecretOfTheFileIsAccepted) {
  weft::testlib::TempDir dir;
  std::ofstream(dir.file("secret"))
      << "# rotated 2026-11-27\nnew-secret-0123456789\n\nold-secret-0123456789\n";
  Config cfg = config("agent_secret_file: " + dir.file("secret") + "\n");
  ASSERT_EQ(cfg.agent_secrets.size(), 2u);
  EXPECT_EQ(cfg.agent_secrets[0], "new-secret-0123456789");
  EXPECT_EQ(identify(cfg, "Bearer " + agent_token("old-secret-0123456789", "h1")).role, Role::agent);
  EXPECT_EQ(identify(cfg, "Bearer " + agent_token("new-secret-0123456789", "h1")).role, Role::agent);
}

TEST(Auth, RolesAndBasicAuth) {
  Config cfg = config("agent_secret: " + kSecret +
                      "\nadmin_tokens: [the-admin-token]\nread_tokens: [the-read-token]\n"
                      "tokens: [the-shared-token]\nshared_tokens: true\n");
  EXPECT_EQ(identify(cfg, "Bearer the-admin-token").role, Role::admin);
  EXPECT_EQ(identify(cfg, "Bearer the-read-token").role, Role::reader);
  EXPECT_EQ(identify(cfg, "Bearer the-shared-token").role, Role::shared_agent);
  EXPECT_EQ(identify(cfg, "Bearer the-read-toke").role, Role::none);
  // Basic: any user, the token as the password ("anyone:the-read-token").
  EXPECT_EQ(identify(cfg, "Basic YW55b25lOnRoZS1yZWFkLXRva2Vu").role, Role::reader);
  EXPECT_EQ(identify(cfg, "Basic !!!").role, Role::none);
  // A shared token is not bound to any name.
  EXPECT_EQ(bound_agent_name("Bearer the-shared-token"), "");
}

TEST(Auth, ConfigRules) {
  // One token for every agent only when asked for, and then agents may move over.
  EXPECT_NE(error_of("tokens: [shared-token-1]\n").find("shared_tokens: true"), std::string::npos);
  EXPECT_NE(error_of("shared_tokens: true\n").find("needs tokens"), std::string::npos);
  // Beyond loopback: agent endpoints and the read API need credentials, or an explicit open_*.
  EXPECT_NE(error_of("listen: 0.0.0.0:8080\nread_tokens: [read-token-1]\n").find("agent_secret_file"),
            std::string::npos);
  EXPECT_NE(error_of("listen: 0.0.0.0:8080\nagent_secret: " + kSecret + "\n").find("read_tokens"),
            std::string::npos);
  EXPECT_NE(error_of("agent_secret: short\n").find("16 characters"), std::string::npos);
  Config open_proxy =
      config("listen: 0.0.0.0:8080\nagent_secret: " + kSecret + "\nopen_read: true\nplain_http: true\n");
  EXPECT_TRUE(read_open(open_proxy));
  EXPECT_FALSE(admin_open(open_proxy));
  // Loopback only, nothing configured: a single-machine trial, everything open.
  Config trial = config("listen: 127.0.0.1:8080\n");
  EXPECT_TRUE(loopback_only(trial));
  EXPECT_FALSE(agent_auth_on(trial));
  EXPECT_TRUE(read_open(trial));
  EXPECT_TRUE(admin_open(trial));
  // A read token given on loopback is required there too.
  EXPECT_FALSE(read_open(config("listen: '[::1]:8080'\nread_tokens: [read-token-1]\n")));
}

// A verified token is remembered per thread (no HMAC per request), but only under the secrets it
// was verified with: once the secret is rotated out, the same token is refused at once.
TEST(Auth, RememberedTokensFollowTheSecret) {
  Config cfg = config("agent_secret: " + kSecret + "\n");
  const std::string t = agent_token(kSecret, "h1");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(identify(cfg, "Bearer " + t).agent, "h1");
  Config rotated = config("agent_secret: another-secret-0123456789\n");
  EXPECT_EQ(identify(rotated, "Bearer " + t).role, Role::none);
  EXPECT_EQ(identify(rotated, "Bearer " + agent_token("another-secret-0123456789", "h1")).agent, "h1");
  EXPECT_EQ(identify(cfg, "Bearer " + t).agent, "h1");
  // A wrong MAC after a right one is still refused (what is remembered is the whole token).
  std::string wrong = t;
  wrong.back() = wrong.back() == '0' ? '1' : '0';
  EXPECT_EQ(identify(cfg, "Bearer " + wrong).role, Role::none);
}
