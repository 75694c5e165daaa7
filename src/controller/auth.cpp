#include "controller/auth.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <unordered_set>
#include <vector>

#include "base/log.hpp"
#include "net/address.hpp"
#include "proto/names.hpp"

namespace weft::controller {
namespace {

constexpr size_t kMacHexLength = 64;  // HMAC-SHA256, hex
// Domain separation: the same secret must not yield these MACs for any other purpose.
constexpr std::string_view kTokenContext = "weft agent token v1\n";

std::string mac_hex(std::string_view secret, std::string_view name) {
  std::string msg;
  msg.reserve(kTokenContext.size() + name.size());
  msg.append(kTokenContext).append(name);
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), mac.data(), &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(len * 2, '0');
  for (unsigned i = 0; i < len; ++i) {
    out[2 * i] = kHex[mac[i] >> 4];
    out[2 * i + 1] = kHex[mac[i] & 15];
  }
  return out;
}

// Constant time in the content (the lengths are not secret).
bool same(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool in_list(const std::vector<std::string>& list, std::string_view t) {
  bool hit = false;
  for (const auto& x : list) hit |= same(x, t);  // no early exit: no hint which entry matched
  return hit;
}

int b64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Standard base64 (padding optional); nullopt-like "" on garbage.
bool base64_decode(std::string_view in, std::string& out) {
  out.clear();
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    int v = b64_value(c);
    if (v < 0) return false;
    acc = acc << 6 | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>(acc >> bits & 0xff));
    }
  }
  return true;
}

// The token in "Bearer T" or the password in "Basic base64(user:T)"; "" when neither.
std::string token_of(std::string_view authorization) {
  if (authorization.starts_with("Bearer ")) return std::string(authorization.substr(7));
  if (authorization.starts_with("Basic ")) {
    std::string userpass;
    if (authorization.size() > 4096 || !base64_decode(authorization.substr(6), userpass)) return {};
    auto colon = userpass.find(':');
    return colon == std::string::npos ? std::string() : userpass.substr(colon + 1);
  }
  return {};
}

// "NAME.HEX" split at the last dot (names may hold dots, the MAC never does).
bool split_agent_token(std::string_view t, std::string_view& name, std::string_view& mac) {
  auto dot = t.rfind('.');
  if (dot == std::string_view::npos || t.size() - dot - 1 != kMacHexLength) return false;
  name = t.substr(0, dot);
  mac = t.substr(dot + 1);
  return proto::valid_host_name(name);
}

bool loopback_host(const std::string& host) {
  return host.starts_with("127.") || host == "::1" || host == "[::1]" || host == "localhost";
}

}  // namespace

std::string agent_token(std::string_view secret, std::string_view name) {
  return std::string(name) + "." + mac_hex(secret, name);
}

namespace {

// Agent tokens this thread has verified, under the secrets they were verified with: an agent sends
// the same token with every request, and an HMAC per request (a few microseconds with OpenSSL's
// one-shot set-up) was a measurable share of ingest (docs/BENCHMARKS.md, "Ingest with per-agent
// identity"). Only tokens that passed are kept, at most kMaxVerified per thread (then it starts
// over), so a client sending garbage neither fills it nor skips the check.
struct VerifiedTokens {
  static constexpr size_t kMaxVerified = 8192;
  std::vector<std::string> secrets;
  std::unordered_set<std::string> tokens;
  bool has(const std::vector<std::string>& s, const std::string& token) {
    if (s != secrets) {
      secrets = s;
      tokens.clear();
    }
    return tokens.contains(token);
  }
  void add(const std::string& token) {
    if (tokens.size() >= kMaxVerified) tokens.clear();
    tokens.insert(token);
  }
};

bool agent_token_valid(const Config& cfg, const std::string& token, std::string_view name,
                       std::string_view mac) {
  thread_local VerifiedTokens verified;
  if (verified.has(cfg.agent_secrets, token)) return true;
  bool ok = false;
  for (const auto& s : cfg.agent_secrets) ok |= same(mac_hex(s, name), mac);
  if (ok) verified.add(token);
  return ok;
}

}  // namespace

Principal identify(const Config& cfg, std::string_view authorization) {
  const std::string t = token_of(authorization);
  if (t.empty()) return {};
  if (in_list(cfg.admin_tokens, t)) return {Role::admin, {}};
  if (in_list(cfg.read_tokens, t)) return {Role::reader, {}};
  std::string_view name, mac;
  if (!cfg.agent_secrets.empty() && split_agent_token(t, name, mac) && agent_token_valid(cfg, t, name, mac))
    return {Role::agent, std::string(name)};
  if (cfg.shared_tokens && in_list(cfg.tokens, t)) return {Role::shared_agent, {}};
  return {};
}

std::string_view bound_agent_name(std::string_view authorization) {
  if (!authorization.starts_with("Bearer ")) return {};  // agents send Bearer
  std::string_view name, mac;
  return split_agent_token(authorization.substr(7), name, mac) ? name : std::string_view();
}

bool loopback_only(const Config& cfg) {
  for (const auto& l : cfg.listen) {
    auto hp = net::split_host_port(l, 0, /*allow_port_zero=*/true);
    if (!hp || !loopback_host(hp->first)) return false;
  }
  return true;
}

bool agent_auth_on(const Config& cfg) { return !cfg.agent_secrets.empty() || !cfg.tokens.empty(); }

bool read_open(const Config& cfg) { return cfg.open_read || (cfg.read_tokens.empty() && loopback_only(cfg)); }

bool admin_open(const Config& cfg) {
  return cfg.admin_tokens.empty() && cfg.read_tokens.empty() && !agent_auth_on(cfg) && loopback_only(cfg);
}

Status check_credentials(const Config& cfg) {
  if (!cfg.tokens.empty() && !cfg.shared_tokens)
    return fail(
        "tokens: a shared token lets any agent report as any other; give each agent its own token "
        "(agent_secret_file, `weft token agent NAME`; docs/deploy.md \"Credentials\"), or set "
        "shared_tokens: true while agents move over");
  if (cfg.shared_tokens && cfg.tokens.empty()) return fail("shared_tokens: true needs tokens");
  if (!loopback_only(cfg)) {
    if (!agent_auth_on(cfg) && !cfg.open_agents)
      return fail(
          "listen: a non-loopback address with no agent credential would let anyone report as any "
          "agent: set agent_secret_file (or open_agents: true on a trusted network)");
    if (cfg.read_tokens.empty() && !cfg.open_read)
      return fail(
          "listen: a non-loopback address needs read_tokens for the read API, dashboard and /metrics "
          "(or open_read: true behind an authenticating reverse proxy, docs/deploy.md)");
    if (cfg.tls_cert.empty() && !cfg.plain_http)
      return fail(
          "listen: a non-loopback address without TLS sends tokens and reports in clear text: set "
          "tls_cert and tls_key (docs/controller.md \"TLS\"), or plain_http: true behind a "
          "TLS-terminating reverse proxy or on a network you trust");
  }
  return {};
}

void warn_about_credentials(const Config& cfg) {
  if (cfg.shared_tokens)
    log().warn(
        "shared_tokens: any holder of a shared token can report as any agent; give agents their own "
        "tokens (`weft token agent NAME`) and remove `tokens` (docs/deploy.md \"Credentials\")");
  if (!agent_auth_on(cfg) && !loopback_only(cfg))
    log().warn("open_agents: anyone who reaches this port can register and report as any agent");
  if (!loopback_only(cfg) && cfg.open_read)
    log().warn("open_read: the read API, dashboard and /metrics answer anyone who reaches this port");
  if (!loopback_only(cfg) && cfg.tls_cert.empty())
    log().warn(
        "plain_http: serving plain HTTP beyond loopback; tokens, reports and the read API cross the "
        "network in clear text (set tls_cert and tls_key, docs/controller.md \"TLS\")");
}

}  // namespace weft::controller
