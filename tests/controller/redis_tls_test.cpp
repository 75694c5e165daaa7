// The Redis store over TLS (rediss://, rediss-cluster://; controller/redis_tls.hpp). RedisTls.* run
// through with_redis_tls.sh against real redis-servers that speak TLS, with certificates made up
// for the run; without it they skip. StoreTlsConfig.* need no server.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "controller/config.hpp"
#include "controller/redis_conn.hpp"
#include "controller/store.hpp"
#include "lib/test_util.hpp"

using namespace weft::controller;
using namespace weft::testlib;
using weft::controller::redis::TlsFiles;
using weft::proto::Protocol;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

TlsFiles client_files() {
  return {env("WEFT_TEST_REDIS_TLS_CA"), env("WEFT_TEST_REDIS_TLS_CERT"), env("WEFT_TEST_REDIS_TLS_KEY")};
}

// Writes `n` windows from src to dst in one append (one pipelined transaction) and reads them back.
void round_trip(Store& s, const std::string& src, const std::string& dst, int n) {
  const int64_t t = now_ns() - 600'000'000'000;
  std::vector<weft::proto::WindowStats> ws;
  for (int i = 0; i < n; ++i)
    ws.push_back(window(dst, t + i * 1'000'000'000LL, 100, static_cast<uint64_t>(i % 7)));
  auto st = s.append(src, ws, now_ns());
  ASSERT_TRUE(st) << st.error().message;
  auto h = s.history(Protocol::udp, src, dst, 0, INT64_MAX, n + 10);
  ASSERT_TRUE(h) << h.error().message;
  ASSERT_EQ(h->size(), static_cast<size_t>(n));
  EXPECT_EQ(h->back().lost, static_cast<uint64_t>((n - 1) % 7));
}

}  // namespace

TEST(RedisTls, StoreWithClientCertificateAndPassword) {
  if (env("WEFT_TEST_REDIS_TLS").empty()) GTEST_SKIP() << "WEFT_TEST_REDIS_TLS not set (with_redis_tls.sh)";
  auto s = open_store(env("WEFT_TEST_REDIS_TLS"), client_files());
  ASSERT_TRUE(s) << s.error().message;
  round_trip(**s, "tls-a", "tls-b", 3);
  // 20,000 windows in one transaction: far more than a socket buffer each way, so the tunnel's
  // pump must move replies while hiredis is still writing commands.
  round_trip(**s, "tls-c", "tls-d", 20'000);
}

TEST(RedisTls, AServerTheCaDidNotSignIsRefusedAndSaysWhy) {
  if (env("WEFT_TEST_REDIS_TLS").empty()) GTEST_SKIP() << "WEFT_TEST_REDIS_TLS not set (with_redis_tls.sh)";
  auto files = client_files();
  files.ca = env("WEFT_TEST_REDIS_TLS_WRONG_CA");
  const auto t0 = std::chrono::steady_clock::now();
  auto s = open_store(env("WEFT_TEST_REDIS_TLS"), files);
  ASSERT_FALSE(s);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  EXPECT_NE(s.error().message.find("not trusted"), std::string::npos) << s.error().message;
  // Waiting does not cure a certificate the CA did not sign: start-up must not retry it forever.
  EXPECT_NE(s.error().code, kStoreUnreachable) << s.error().message;
  // Nor does the password leak into the message.
  EXPECT_EQ(s.error().message.find(env("WEFT_TEST_REDIS_TLS").substr(10, 12)), std::string::npos)
      << s.error().message;
}

TEST(RedisTls, WithoutTheClientCertificateTheServerRefuses) {
  if (env("WEFT_TEST_REDIS_TLS").empty()) GTEST_SKIP() << "WEFT_TEST_REDIS_TLS not set (with_redis_tls.sh)";
  // Several times: the server's refusal races the client's first write (AUTH). Written after the
  // server reset the connection, that write raised SIGPIPE and ended the process (rc 141) unless
  // the store blocks it.
  for (int i = 0; i < 20; ++i) {
    auto s = open_store(env("WEFT_TEST_REDIS_TLS"), TlsFiles{env("WEFT_TEST_REDIS_TLS_CA"), "", ""});
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("127.0.0.1"), std::string::npos) << s.error().message;
    EXPECT_NE(s.error().message.find("client certificate"), std::string::npos) << s.error().message;
  }
}

TEST(RedisTls, TlsToAPlainPortFailsClearly) {
  if (env("WEFT_TEST_REDIS_TLS").empty()) GTEST_SKIP() << "WEFT_TEST_REDIS_TLS not set (with_redis_tls.sh)";
  const std::string url = env("WEFT_TEST_REDIS_TLS");
  const std::string plain = url.substr(0, url.rfind(':') + 1) + env("WEFT_TEST_REDIS_TLS_PLAIN_PORT");
  const auto t0 = std::chrono::steady_clock::now();
  auto s = open_store(plain, client_files());
  ASSERT_FALSE(s);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_NE(s.error().message.find("TLS port?"), std::string::npos) << s.error().message;
}

TEST(RedisTls, ClusterOverTls) {
  if (env("WEFT_TEST_REDIS_TLS_CLUSTER").empty()) GTEST_SKIP() << "WEFT_TEST_REDIS_TLS_CLUSTER not set";
  auto s = open_store(env("WEFT_TEST_REDIS_TLS_CLUSTER"), TlsFiles{env("WEFT_TEST_REDIS_TLS_CA"), "", ""});
  ASSERT_TRUE(s) << s.error().message;
  // Agents whose keys hash to different slots, so every master is reached over its own tunnel.
  for (int i = 0; i < 12; ++i) round_trip(**s, "tls-src-" + std::to_string(i), "tls-dst", 50);
}

TEST(StoreTlsConfig, TlsFilesOnlyWithATlsStore) {
  auto plain = parse_config("store: redis://127.0.0.1:6379\nstore_ca: /etc/ssl/ca.pem\n", "/etc/weft/c.yaml");
  ASSERT_FALSE(plain);
  EXPECT_NE(plain.error().message.find("rediss://"), std::string::npos) << plain.error().message;
  auto half = parse_config("store: rediss://127.0.0.1:6380\nstore_cert: client.pem\n", "/etc/weft/c.yaml");
  ASSERT_FALSE(half);
  EXPECT_NE(half.error().message.find("store_key"), std::string::npos) << half.error().message;
  auto ok = parse_config(
      "store: rediss-cluster://10.0.0.1:6380,10.0.0.2:6380\nstore_ca: ca.pem\nstore_cert: c.pem\nstore_key: "
      "c.key\n",
      "/etc/weft/c.yaml");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->store_ca, "/etc/weft/ca.pem");  // relative to the config's folder
  EXPECT_EQ(ok->store_key, "/etc/weft/c.key");
  auto unknown = parse_config("store: redisss://h:1\n", "/etc/weft/c.yaml");
  ASSERT_FALSE(unknown);
}

TEST(StoreTlsConfig, AnUnreadableCaFailsAtOnceNamingTheFile) {
  auto s = open_store("rediss://127.0.0.1:1", TlsFiles{"/nonexistent/ca.pem", "", ""});
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("/nonexistent/ca.pem"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().code, kStoreUnreachable);
  auto plain = open_store("redis://127.0.0.1:1", TlsFiles{"/etc/ssl/certs/ca-certificates.crt", "", ""});
  ASSERT_FALSE(plain);
  EXPECT_NE(plain.error().message.find("rediss://"), std::string::npos) << plain.error().message;
}
