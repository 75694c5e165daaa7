// The event-driven HTTP server over TLS (net/http/tls.hpp) on loopback: answers over TLS 1.3 and
// 1.2, refuses older versions and plain HTTP, closes a handshake that stalls within header_timeout,
// reloads its certificate for new connections while an open one carries on, moves a body larger
// than the socket buffers, and with a client CA (mutual TLS) hands the certificate's name to the
// handler and refuses a client without one, with an expired one or with one another CA signed.
// Keys and certificates are made at run time.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "net/http/server.hpp"

namespace weft::net::http {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// ---- certificates made at run time ----
struct KeyCert {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  ~KeyCert() {
    EVP_PKEY_free(key);
    X509_free(cert);
  }
};

void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  ASSERT_NE(ext, nullptr);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A P-256 key and a certificate for `cn` (with `san` as subjectAltName when given), signed by
// `issuer` (self-signed, a CA, when null).
// `expired`: valid from two hours ago until an hour ago.
std::unique_ptr<KeyCert> make_cert(const char* cn, const KeyCert* issuer, const char* san = nullptr,
                                   bool expired = false) {
  auto kc = std::make_unique<KeyCert>();
  kc->key = EVP_EC_gen("P-256");
  kc->cert = X509_new();
  X509_set_version(kc->cert, 2);
  static long serial = 1;
  ASN1_INTEGER_set(X509_get_serialNumber(kc->cert), serial++);
  X509_gmtime_adj(X509_getm_notBefore(kc->cert), expired ? -7200 : -60);
  X509_gmtime_adj(X509_getm_notAfter(kc->cert), expired ? -3600 : 3600);
  X509_set_pubkey(kc->cert, kc->key);
  X509_NAME* name = X509_get_subject_name(kc->cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
  X509* issuer_cert = issuer ? issuer->cert : kc->cert;
  X509_set_issuer_name(kc->cert, X509_get_subject_name(issuer_cert));
  if (!issuer) {
    add_ext(kc->cert, issuer_cert, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(kc->cert, issuer_cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add_ext(kc->cert, issuer_cert, NID_basic_constraints, "CA:FALSE");
  }
  if (san) add_ext(kc->cert, issuer_cert, NID_subject_alt_name, san);
  X509_sign(kc->cert, issuer ? issuer->key : kc->key, EVP_sha256());
  return kc;
}

void write_pem(const fs::path& p, const KeyCert& kc, bool key) {
  FILE* f = std::fopen(p.c_str(), "w");
  ASSERT_NE(f, nullptr);
  if (key)
    PEM_write_PrivateKey(f, kc.key, nullptr, nullptr, 0, nullptr, nullptr);
  else
    PEM_write_X509(f, kc.cert);
  std::fclose(f);
}

std::string sha256_of(X509* cert) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  X509_digest(cert, EVP_sha256(), md, &n);
  return std::string(reinterpret_cast<char*>(md), n);
}

// ---- a blocking TLS client ----
int tcp_connect(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

struct TlsClient {
  SSL_CTX* ctx = nullptr;
  SSL* ssl = nullptr;
  int fd = -1;
  bool ok = false;  // handshake done and the server's certificate verified
  std::string in;

  TlsClient(uint16_t port, const fs::path& ca, int max_version = 0, const KeyCert* client = nullptr) {
    ::signal(SIGPIPE,
             SIG_IGN);  // OpenSSL writes with send(): a server that closed must fail the write, not the test
    ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(ctx, 0);
    if (max_version) {
      SSL_CTX_set_security_level(ctx, 0);  // let the client offer TLS 1.1 at all
      SSL_CTX_set_max_proto_version(ctx, max_version);
    }
    SSL_CTX_load_verify_locations(ctx, ca.c_str(), nullptr);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    if (client) {
      SSL_CTX_use_certificate(ctx, client->cert);
      SSL_CTX_use_PrivateKey(ctx, client->key);
    }
    fd = tcp_connect(port);
    if (fd < 0) return;
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    SSL_set1_host(ssl, "localhost");
    ok = SSL_connect(ssl) == 1 && SSL_get_verify_result(ssl) == X509_V_OK;
    ERR_clear_error();
  }
  ~TlsClient() {
    if (ssl) SSL_free(ssl);
    if (fd >= 0) ::close(fd);
    SSL_CTX_free(ctx);
  }
  bool send(std::string_view s) {
    while (!s.empty()) {
      int w = SSL_write(ssl, s.data(), static_cast<int>(s.size()));
      if (w <= 0) return false;
      s.remove_prefix(static_cast<size_t>(w));
    }
    return true;
  }
  // One Content-Length answer: "STATUS BODY", or "" when none came.
  std::string answer() {
    while (true) {
      auto end = in.find("\r\n\r\n");
      if (end != std::string::npos) {
        size_t len = 0;
        auto cl = in.find("Content-Length: ");
        if (cl != std::string::npos && cl < end) len = std::stoul(in.substr(cl + 16));
        if (in.size() >= end + 4 + len) {
          std::string out = in.substr(9, 3) + " " + in.substr(end + 4, len);
          in.erase(0, end + 4 + len);
          return out;
        }
      }
      char buf[65536];
      int r = SSL_read(ssl, buf, sizeof buf);
      if (r <= 0) return {};
      in.append(buf, static_cast<size_t>(r));
    }
  }
  std::string peer_sha256() {
    X509* c = SSL_get0_peer_certificate(ssl);
    return c ? sha256_of(c) : std::string();
  }
};

struct Pki {
  fs::path dir;
  std::unique_ptr<KeyCert> ca, server, other_ca;
  Pki() {
    dir = fs::temp_directory_path() / ("weft-tls-test-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    ca = make_cert("weft test CA", nullptr);
    other_ca = make_cert("someone else's CA", nullptr);
    server = make_cert("controller", ca.get(), "DNS:localhost,IP:127.0.0.1");
    write_pem(dir / "ca.pem", *ca, false);
    write_pem(dir / "other-ca.pem", *other_ca, false);
    write_pem(dir / "server.pem", *server, false);
    write_pem(dir / "server.key", *server, true);
  }
  ~Pki() { fs::remove_all(dir); }
  TlsServerFiles files(bool client_ca = false) const {
    return {(dir / "server.pem").string(), (dir / "server.key").string(),
            client_ca ? (dir / "ca.pem").string() : std::string()};
  }
};

struct TlsFixture {
  std::unique_ptr<Server> server;
  std::shared_ptr<TlsServerContext> tls;
  uint16_t port = 0;

  explicit TlsFixture(const TlsServerFiles& files, ServerOptions opt = {}) {
    auto t = TlsServerContext::load(files);
    EXPECT_TRUE(t.has_value()) << (t ? "" : t.error().message);
    if (!t) return;
    tls = *t;
    opt.tls = tls;
    Router r;
    r.add("GET", "/who",
          [](const Request& q, Response& s) { s.set(200, "client=" + q.tls_client, "text/plain"); });
    r.add("POST", "/size", [](const Request& q, Response& s) {
      s.set(200, std::to_string(q.body.size()) + ":" + q.body, "text/plain");  // echoes it back
    });
    server = std::make_unique<Server>(std::move(r), std::move(opt));
    auto p = server->listen(*SocketAddress::parse_ip("127.0.0.1", 0));
    EXPECT_TRUE(p.has_value());
    port = p ? *p : 0;
    EXPECT_TRUE(server->start().has_value());
  }
};

TEST(HttpTls, AnswersOverTls13And12AndRefusesOlderVersionsAndPlainHttp) {
  Pki pki;
  TlsFixture f(pki.files());
  ASSERT_TRUE(f.server);
  {
    TlsClient c(f.port, pki.dir / "ca.pem");
    ASSERT_TRUE(c.ok);
    EXPECT_EQ(SSL_version(c.ssl), TLS1_3_VERSION);  // preferred when the client offers it
    ASSERT_TRUE(c.send("GET /who HTTP/1.1\r\n\r\nGET /who HTTP/1.1\r\n\r\n"));  // pipelined
    EXPECT_EQ(c.answer(), "200 client=");
    EXPECT_EQ(c.answer(), "200 client=");
  }
  {
    TlsClient c(f.port, pki.dir / "ca.pem", TLS1_2_VERSION);
    ASSERT_TRUE(c.ok);
    EXPECT_EQ(SSL_version(c.ssl), TLS1_2_VERSION);
    ASSERT_TRUE(c.send("GET /who HTTP/1.1\r\n\r\n"));
    EXPECT_EQ(c.answer(), "200 client=");
  }
  TlsClient old(f.port, pki.dir / "ca.pem", TLS1_1_VERSION);
  EXPECT_FALSE(old.ok);
  // A client that verifies against another CA refuses the server.
  TlsClient wrong(f.port, pki.dir / "other-ca.pem");
  EXPECT_FALSE(wrong.ok);
  // Plain HTTP to the TLS port: no answer, the connection closes.
  int fd = tcp_connect(f.port);
  ASSERT_GE(fd, 0);
  std::string_view get = "GET /who HTTP/1.1\r\n\r\n";
  ASSERT_EQ(::send(fd, get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
  char buf[512];
  ssize_t got = ::recv(fd, buf, sizeof buf, 0);
  // Closed (or reset) with at most a TLS alert: never an HTTP answer.
  EXPECT_TRUE(got <= 0 ||
              std::string_view(buf, static_cast<size_t>(got)).find("HTTP/") == std::string_view::npos);
  if (got > 0) {
    EXPECT_LE(::recv(fd, buf, sizeof buf, 0), 0);
  }
  ::close(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto st = f.server->stats();
  EXPECT_GE(st.tls_handshakes, 2u);
  EXPECT_GE(st.tls_handshake_failures, 2u);  // TLS 1.1, plain HTTP (the wrong-CA client gives up itself)
}

TEST(HttpTls, AHandshakeThatStallsIsClosedWithinTheHeaderTimeout) {
  Pki pki;
  ServerOptions opt;
  opt.header_timeout_ns = 600'000'000;
  opt.idle_timeout_ns = 30'000'000'000;  // far away: the handshake, not idleness, must close it
  TlsFixture f(pki.files(), opt);
  ASSERT_TRUE(f.server);
  const auto t0 = Clock::now();
  int silent = tcp_connect(f.port);   // connects and says nothing
  int partial = tcp_connect(f.port);  // starts a ClientHello and stops
  ASSERT_GE(silent, 0);
  ASSERT_GE(partial, 0);
  const char hello_start[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, (char)0xfc, 0x03, 0x03};
  ASSERT_EQ(::send(partial, hello_start, sizeof hello_start, MSG_NOSIGNAL), (ssize_t)sizeof hello_start);
  char buf[64];
  EXPECT_EQ(::recv(silent, buf, sizeof buf, 0), 0);  // closed by the server (SO_RCVTIMEO is 5 s)
  EXPECT_EQ(::recv(partial, buf, sizeof buf, 0), 0);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_GE(s, 0.5);
  EXPECT_LT(s, 2.0);
  ::close(silent);
  ::close(partial);
  auto st = f.server->stats();
  EXPECT_EQ(st.tls_handshake_timeouts, 2u);
  EXPECT_EQ(st.timed_out_idle, 0u);
}

TEST(HttpTls, ThePerAddressLimitHoldsAndAnIdleConnectionMakesRoomAtTheCap) {
  Pki pki;
  ServerOptions opt;
  opt.max_connections_per_address = 2;
  TlsFixture f(pki.files(), opt);
  ASSERT_TRUE(f.server);
  TlsClient a(f.port, pki.dir / "ca.pem"), b(f.port, pki.dir / "ca.pem");
  ASSERT_TRUE(a.ok);
  ASSERT_TRUE(b.ok);
  TlsClient third(f.port, pki.dir / "ca.pem");  // closed at accept: no plain-text 503 on a TLS port
  EXPECT_FALSE(third.ok);
  EXPECT_EQ(f.server->stats().refused_address, 1u);
  ASSERT_TRUE(a.send("GET /who HTTP/1.1\r\n\r\n"));  // the two admitted ones still answer
  EXPECT_EQ(a.answer(), "200 client=");
  f.server->stop();

  // At max_connections the connection idle the longest (one that finished its handshake and sent
  // nothing since) is closed to make room; a connection still in its handshake is never idle.
  ServerOptions capped;
  capped.max_connections = 2;
  TlsFixture g(pki.files(), capped);
  ASSERT_TRUE(g.server);
  TlsClient idle(g.port, pki.dir / "ca.pem");
  ASSERT_TRUE(idle.ok);
  int handshaking = tcp_connect(g.port);  // says nothing: in its handshake until header_timeout
  ASSERT_GE(handshaking, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  TlsClient fresh(g.port, pki.dir / "ca.pem");
  ASSERT_TRUE(fresh.ok);
  ASSERT_TRUE(fresh.send("GET /who HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(fresh.answer(), "200 client=");
  EXPECT_EQ(g.server->stats().shed_idle, 1u);
  EXPECT_TRUE(!idle.send("GET /who HTTP/1.1\r\n\r\n") || idle.answer().empty());  // it was the one shed
  ::close(handshaking);
}

TEST(HttpTls, ReloadServesTheNewCertificateToNewConnectionsAndKeepsOpenOnes) {
  Pki pki;
  TlsFixture f(pki.files());
  ASSERT_TRUE(f.server);
  TlsClient before(f.port, pki.dir / "ca.pem");
  ASSERT_TRUE(before.ok);
  const std::string old_fp = before.peer_sha256();
  EXPECT_EQ(old_fp, sha256_of(pki.server->cert));
  auto renewed = make_cert("controller", pki.ca.get(), "DNS:localhost");
  write_pem(pki.dir / "server.pem", *renewed, false);
  write_pem(pki.dir / "server.key", *renewed, true);
  ASSERT_TRUE(f.tls->reload().has_value());
  TlsClient after(f.port, pki.dir / "ca.pem");
  ASSERT_TRUE(after.ok);
  EXPECT_EQ(after.peer_sha256(), sha256_of(renewed->cert));
  EXPECT_NE(after.peer_sha256(), old_fp);
  // The connection opened before the reload still answers.
  ASSERT_TRUE(before.send("GET /who HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(before.answer(), "200 client=");
  // A broken file keeps the context in use and says why.
  {
    std::FILE* fp = std::fopen((pki.dir / "server.pem").c_str(), "w");
    std::fputs("not PEM\n", fp);
    std::fclose(fp);
  }
  auto bad = f.tls->reload();
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("server.pem"), std::string::npos) << bad.error().message;
  TlsClient still(f.port, pki.dir / "ca.pem");
  ASSERT_TRUE(still.ok);
  EXPECT_EQ(still.peer_sha256(), sha256_of(renewed->cert));
}

TEST(HttpTls, LargeBodiesCrossInBothDirections) {
  Pki pki;
  TlsFixture f(pki.files());
  ASSERT_TRUE(f.server);
  TlsClient c(f.port, pki.dir / "ca.pem");
  ASSERT_TRUE(c.ok);
  std::string body(3u << 20, 'x');
  for (size_t i = 0; i < body.size(); i += 4096) body[i] = static_cast<char>('a' + (i / 4096) % 26);
  // The server reads the whole body before it answers, so the client may send it all first; the
  // answer (as large) then leaves the server in many partial writes.
  ASSERT_TRUE(c.send("POST /size HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n"));
  ASSERT_TRUE(c.send(body));
  std::string a = c.answer();
  EXPECT_EQ(a, "200 " + std::to_string(body.size()) + ":" + body);
}

// The server reads ahead (one recv takes every record in the socket). 40 requests, each its own TLS
// record, reach it in one segment (the client corks its socket): more records than one event's
// reads (16), all of them out of the socket at once, so no further event announces the rest. Every
// one is answered, in order, without the client sending anything more.
TEST(HttpTls, RecordsReadAheadBeyondOneEventsReadsAreAllAnswered) {
  Pki pki;
  TlsFixture f(pki.files());
  ASSERT_TRUE(f.server);
  TlsClient c(f.port, pki.dir / "ca.pem");
  ASSERT_TRUE(c.ok);
  int on = 1, off = 0;
  ASSERT_EQ(setsockopt(c.fd, IPPROTO_TCP, TCP_CORK, &on, sizeof on), 0);
  constexpr int kRequests = 40;
  for (int i = 0; i < kRequests; ++i) {
    std::string body = "request-" + std::to_string(i);
    ASSERT_TRUE(
        c.send("POST /size HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body));
  }
  ASSERT_EQ(setsockopt(c.fd, IPPROTO_TCP, TCP_CORK, &off, sizeof off), 0);
  for (int i = 0; i < kRequests; ++i) {
    std::string body = "request-" + std::to_string(i);
    ASSERT_EQ(c.answer(), "200 " + std::to_string(body.size()) + ":" + body) << "answer " << i;
  }
}

TEST(HttpTls, MutualTlsNamesTheClientAndRefusesMissingExpiredAndForeignCertificates) {
  Pki pki;
  TlsFixture f(pki.files(/*client_ca=*/true));
  ASSERT_TRUE(f.server);
  auto agent = make_cert("not-this", pki.ca.get(), "DNS:host7");
  TlsClient with(f.port, pki.dir / "ca.pem", 0, agent.get());
  ASSERT_TRUE(with.ok);
  ASSERT_TRUE(with.send("GET /who HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(with.answer(), "200 client=host7");  // the DNS subjectAltName before the CN
  auto cn_only = make_cert("host8", pki.ca.get());
  TlsClient cn(f.port, pki.dir / "ca.pem", 0, cn_only.get());
  ASSERT_TRUE(cn.ok);
  ASSERT_TRUE(cn.send("GET /who HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(cn.answer(), "200 client=host8");
  // TLS 1.3 clients learn of the refusal at their first read.
  TlsClient without(f.port, pki.dir / "ca.pem");
  EXPECT_TRUE(!without.ok || !without.send("GET /who HTTP/1.1\r\n\r\n") || without.answer().empty());
  auto expired = make_cert("host10", pki.ca.get(), "DNS:host10", /*expired=*/true);
  TlsClient old(f.port, pki.dir / "ca.pem", 0, expired.get());
  EXPECT_TRUE(!old.ok || !old.send("GET /who HTTP/1.1\r\n\r\n") || old.answer().empty());
  auto stranger = make_cert("host9", pki.other_ca.get());
  TlsClient foreign(f.port, pki.dir / "ca.pem", 0, stranger.get());
  EXPECT_TRUE(!foreign.ok || !foreign.send("GET /who HTTP/1.1\r\n\r\n") || foreign.answer().empty());
}

TEST(HttpTls, LoadSaysWhatIsWrong) {
  Pki pki;
  auto none =
      TlsServerContext::load({(pki.dir / "absent.pem").string(), (pki.dir / "server.key").string(), ""});
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message.find("absent.pem"), std::string::npos);
  auto other_key = make_cert("x", nullptr);
  write_pem(pki.dir / "other.key", *other_key, true);
  auto mismatch =
      TlsServerContext::load({(pki.dir / "server.pem").string(), (pki.dir / "other.key").string(), ""});
  ASSERT_FALSE(mismatch.has_value());
  EXPECT_NE(mismatch.error().message.find("mismatch"), std::string::npos) << mismatch.error().message;
  auto ok = TlsServerContext::load(pki.files());
  ASSERT_TRUE(ok.has_value());
  EXPECT_NE((*ok)->describe().find("CN=controller"), std::string::npos) << (*ok)->describe();
}

}  // namespace
}  // namespace weft::net::http
