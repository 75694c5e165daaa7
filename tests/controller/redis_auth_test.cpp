// Redis credentials in the store's URL (redis_conn.hpp): how they are read, and (RedisAuth.*, run
// by with_redis_auth.sh against a real redis-server with requirepass and an ACL user) that the
// store works with them, fails clearly without or with wrong ones, and never shows the password.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "controller/redis_conn.hpp"
#include "controller/store.hpp"
#include "lib/test_util.hpp"

using namespace weft::controller;
using namespace weft::testlib;
using weft::controller::redis::Conn;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// "p@ss:x" -> "p%40ss%3Ax"
std::string url_escaped(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.')
      out.push_back(ch);
    else
      out += fmt::format("%{:02X}", static_cast<unsigned char>(ch));
  }
  return out;
}

// redis://USERINFO@127.0.0.1:PORT from with_redis_auth.sh's redis://127.0.0.1:PORT.
std::string with_userinfo(const std::string& userinfo) {
  std::string u = env("WEFT_TEST_REDIS_AUTH");
  return "redis://" + userinfo + "@" + u.substr(8);
}

}  // namespace

TEST(RedisCredentials, SplitFromTheUrl) {
  auto none = Conn::split_credentials("redis://127.0.0.1:6379");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->password, "");
  EXPECT_EQ(none->bare, "redis://127.0.0.1:6379");
  auto pass_only = Conn::split_credentials("redis://:s3cret@10.0.0.5:6380/0");
  ASSERT_TRUE(pass_only);
  EXPECT_EQ(pass_only->user, "");
  EXPECT_EQ(pass_only->password, "s3cret");
  EXPECT_EQ(pass_only->bare, "redis://10.0.0.5:6380/0");
  EXPECT_EQ(pass_only->shown, "redis://:***@10.0.0.5:6380/0");
  auto acl = Conn::split_credentials("redis-cluster://weft:p%40ss%3Aw0rd@a:7000,b:7001");
  ASSERT_TRUE(acl);
  EXPECT_EQ(acl->user, "weft");
  EXPECT_EQ(acl->password, "p@ss:w0rd");
  EXPECT_EQ(acl->bare, "redis-cluster://a:7000,b:7001");
  EXPECT_EQ(acl->shown, "redis-cluster://weft:***@a:7000,b:7001");
  // A password alone (no ':') is ambiguous with a user name: refused, and not echoed.
  auto bare_word = Conn::split_credentials("redis://hunter22@h:1");
  ASSERT_FALSE(bare_word);
  EXPECT_EQ(bare_word.error().message.find("hunter22"), std::string::npos) << bare_word.error().message;
  auto bad_escape = Conn::split_credentials("redis://:ab%4@h:1");
  ASSERT_FALSE(bad_escape);
  EXPECT_NE(bad_escape.error().message.find("%XX"), std::string::npos);
}

TEST(RedisAuth, RequirepassAndAclUser) {
  if (env("WEFT_TEST_REDIS_AUTH").empty())
    GTEST_SKIP() << "WEFT_TEST_REDIS_AUTH not set (with_redis_auth.sh)";
  const std::string pass = env("WEFT_TEST_REDIS_PASS"), acl_pass = env("WEFT_TEST_REDIS_ACL_PASS");
  // Without the password: a clear error that says how to give one.
  auto anon = open_store(env("WEFT_TEST_REDIS_AUTH"));
  ASSERT_FALSE(anon);
  EXPECT_NE(anon.error().message.find("NOAUTH"), std::string::npos) << anon.error().message;
  EXPECT_NE(anon.error().message.find("redis://:PASSWORD@"), std::string::npos) << anon.error().message;
  // A wrong password: refused, and the error shows neither password.
  auto wrong = open_store(with_userinfo(":not-" + url_escaped(pass)));
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("AUTH refused"), std::string::npos) << wrong.error().message;
  EXPECT_EQ(wrong.error().message.find("not-"), std::string::npos) << wrong.error().message;
  // requirepass (the default user): windows go in and come back out.
  {
    auto s = open_store(with_userinfo(":" + url_escaped(pass)));
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ((*s)->info().location.find(pass), std::string::npos);
    EXPECT_NE((*s)->info().location.find(":***@"), std::string::npos) << (*s)->info().location;
    const int64_t t = now_ns() - 30'000'000'000;
    ASSERT_TRUE((*s)->append("auth-a", std::vector{window("auth-b", t, 100, 3)}, now_ns()));
    size_t seen = 0;
    ASSERT_TRUE((*s)->load_recent(t - 1'000'000'000,
                                  [&](const std::string& src, std::span<const weft::proto::WindowStats> ws,
                                      int64_t) { seen += src == "auth-a" ? ws.size() : 0; }));
    EXPECT_EQ(seen, 1u);
  }
  // An ACL user with its own password reads what the default user wrote; a wrong one is refused.
  auto user = open_store(with_userinfo("weft-ctl:" + acl_pass));
  ASSERT_TRUE(user) << user.error().message;
  size_t seen = 0;
  ASSERT_TRUE((*user)->load_recent(now_ns() - 60'000'000'000,
                                   [&](const std::string& src, std::span<const weft::proto::WindowStats> ws,
                                       int64_t) { seen += src == "auth-a" ? ws.size() : 0; }));
  EXPECT_EQ(seen, 1u);
  auto wrong_user = open_store(with_userinfo("weft-ctl:" + url_escaped(pass)));
  ASSERT_FALSE(wrong_user);
  EXPECT_NE(wrong_user.error().message.find("AUTH as weft-ctl refused"), std::string::npos)
      << wrong_user.error().message;
}

// A Redis Cluster whose nodes all want a password (with_redis_cluster.sh with WEFT_REDIS_CLUSTER_PASS):
// the password goes to every node the slot map names, not only the seeds.
TEST(RedisAuth, ClusterWithPassword) {
  if (env("WEFT_TEST_REDIS_CLUSTER_NOAUTH").empty())
    GTEST_SKIP() << "WEFT_TEST_REDIS_CLUSTER_NOAUTH not set (with_redis_cluster.sh, WEFT_REDIS_CLUSTER_PASS)";
  auto anon = open_store(env("WEFT_TEST_REDIS_CLUSTER_NOAUTH"));
  ASSERT_FALSE(anon);
  EXPECT_NE(anon.error().message.find("NOAUTH"), std::string::npos) << anon.error().message;
  auto s = open_store(env("WEFT_TEST_REDIS_CLUSTER"));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_NE((*s)->info().location.find(":***@"), std::string::npos) << (*s)->info().location;
  // Sources whose keys hash to different slots, so writes reach every master.
  const int64_t t = now_ns() - 30'000'000'000;
  for (int i = 0; i < 12; ++i)
    ASSERT_TRUE((*s)->append(fmt::format("cl-auth-{}", i), std::vector{window("x", t, 100, 1)}, now_ns()));
  size_t seen = 0;
  ASSERT_TRUE((*s)->load_recent(
      t - 1'000'000'000, [&](const std::string& src, std::span<const weft::proto::WindowStats> ws, int64_t) {
        seen += src.starts_with("cl-auth-") ? ws.size() : 0;
      }));
  EXPECT_EQ(seen, 12u);
}
