#include "controller/config.hpp"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/duration.hpp"
#include "controller/auth.hpp"
#include "net/address.hpp"
#include "proto/names.hpp"

namespace weft::controller {
namespace {

// Collects the first error with its location; parsing stops being meaningful after it.
struct Ctx {
  std::string source;
  std::string error;

  bool failed() const { return !error.empty(); }
  void bad(const YAML::Node& n, const std::string& field, const std::string& why) {
    if (failed()) return;
    if (n.IsDefined() && n.Mark().line >= 0)
      error = fmt::format("{}:{}:{}: {}: {}", source, n.Mark().line + 1, n.Mark().column + 1, field, why);
    else
      error = fmt::format("{}: {}: {}", source, field, why);
  }
};

std::string join_path(const std::string& base, const std::string& key) {
  return base.empty() ? key : base + "." + key;
}

void check_keys(Ctx& c, const YAML::Node& map, const std::string& path,
                std::initializer_list<const char*> allowed) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    std::string k = it->first.Scalar();
    bool ok = false;
    for (const char* a : allowed) ok = ok || k == a;
    if (!ok) {
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      c.bad(it->first, join_path(path, k), fmt::format("unknown key (allowed: {})", list));
    }
  }
}

std::string scalar(Ctx& c, const YAML::Node& n, const std::string& field) {
  if (!n.IsScalar()) {
    c.bad(n, field, "expected a scalar value");
    return {};
  }
  return n.Scalar();
}

int64_t duration(Ctx& c, const YAML::Node& n, const std::string& field, int64_t min_ns) {
  auto s = scalar(c, n, field);
  if (c.failed()) return 0;
  auto d = parse_duration(s);
  if (!d) {
    c.bad(n, field, d.error().message);
    return 0;
  }
  if (d->count() < min_ns)
    c.bad(n, field, fmt::format("'{}' is too short (at least {} ms)", s, min_ns / 1'000'000));
  return d->count();
}

uint64_t integer(Ctx& c, const YAML::Node& n, const std::string& field, uint64_t lo, uint64_t hi) {
  auto s = scalar(c, n, field);
  if (c.failed()) return 0;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || v < lo || v > hi) {
    c.bad(n, field, fmt::format("'{}' is not an integer in [{}, {}]", s, lo, hi));
    return 0;
  }
  return v;
}

std::vector<std::string> string_list(Ctx& c, const YAML::Node& n, const std::string& field,
                                     bool allow_single) {
  std::vector<std::string> out;
  if (allow_single && n.IsScalar()) {
    out.push_back(n.Scalar());
    return out;
  }
  if (!n.IsSequence()) {
    c.bad(n, field, "expected a list");
    return out;
  }
  for (size_t i = 0; i < n.size(); ++i) out.push_back(scalar(c, n[i], fmt::format("{}[{}]", field, i)));
  return out;
}

std::vector<proto::Protocol> protocol_list(Ctx& c, const YAML::Node& n, const std::string& field) {
  std::vector<proto::Protocol> out;
  if (!n.IsSequence() || n.size() == 0) {
    c.bad(n, field, "expected a non-empty list of protocols (udp, tcp, rdma)");
    return out;
  }
  for (size_t i = 0; i < n.size(); ++i) {
    std::string f = fmt::format("{}[{}]", field, i);
    auto p = proto::parse_protocol(scalar(c, n[i], f));
    if (c.failed()) break;
    if (!p) {
      c.bad(n[i], f, p.error().message);
      break;
    }
    out.push_back(*p);
  }
  return out;
}

std::vector<std::string> patterns(Ctx& c, const YAML::Node& n, const std::string& field) {
  auto out = string_list(c, n, field, true);
  for (size_t i = 0; i < out.size() && !c.failed(); ++i)
    if (!proto::valid_host_pattern(out[i]))
      c.bad(n.IsSequence() ? n[i] : n, fmt::format("{}[{}]", field, i),
            fmt::format("'{}' is not a host name or glob (letters, digits, - _ . * ?)", out[i]));
  if (out.empty()) c.bad(n, field, "must not be empty");
  return out;
}

// HOST:PORT with a port (1-65535), as net/address.hpp parses it everywhere.
bool valid_listen(const std::string& s) {
  auto hp = net::split_host_port(s, 0);
  return hp && hp->second != 0;
}

bool boolean(Ctx& c, const YAML::Node& n, const std::string& field) {
  auto s = scalar(c, n, field);
  if (s == "true") return true;
  if (s != "false") c.bad(n, field, fmt::format("'{}' is not true or false", s));
  return false;
}

// The credential keys (controller/auth.hpp). A secret file holds one secret a line (# comments);
// the first issues tokens, every one is accepted, so a secret can be rotated.
void parse_credentials(Ctx& c, const YAML::Node& root, Config& cfg) {
  auto tokens = [&](const char* key, std::vector<std::string>& out) {
    if (!root[key]) return;
    out = string_list(c, root[key], key, false);
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i].size() < 8)
        c.bad(root[key][i], fmt::format("{}[{}]", key, i), "a token needs at least 8 characters");
  };
  tokens("tokens", cfg.tokens);
  tokens("admin_tokens", cfg.admin_tokens);
  tokens("read_tokens", cfg.read_tokens);
  if (root["agent_secret"] && root["agent_secret_file"])
    c.bad(root["agent_secret_file"], "agent_secret_file", "give agent_secret or agent_secret_file, not both");
  if (root["agent_secret"]) cfg.agent_secrets.push_back(scalar(c, root["agent_secret"], "agent_secret"));
  if (root["agent_secret_file"]) {
    const std::string path = scalar(c, root["agent_secret_file"], "agent_secret_file");
    std::ifstream in(path);
    if (!in && !c.failed()) c.bad(root["agent_secret_file"], "agent_secret_file", "cannot read " + path);
    for (std::string line; std::getline(in, line);) {
      while (!line.empty() && isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
      if (!line.empty() && line[0] != '#') cfg.agent_secrets.push_back(line);
    }
    if (in.eof() && cfg.agent_secrets.empty())
      c.bad(root["agent_secret_file"], "agent_secret_file", path + " holds no secret");
  }
  for (const auto& s : cfg.agent_secrets)
    if (s.size() < 16)
      c.bad(root["agent_secret"] ? root["agent_secret"] : root["agent_secret_file"], "agent_secret",
            "a secret needs at least 16 characters (e.g. `head -c 32 /dev/urandom | base64`)");
  if (root["shared_tokens"]) cfg.shared_tokens = boolean(c, root["shared_tokens"], "shared_tokens");
  if (root["open_agents"]) cfg.open_agents = boolean(c, root["open_agents"], "open_agents");
  if (root["open_read"]) cfg.open_read = boolean(c, root["open_read"], "open_read");
}

// A file the config names, relative to the config file's folder (as an operator reads it).
std::string config_relative(const std::string& source, std::string f) {
  if (!f.empty() && f[0] != '/' && source.find('/') != std::string::npos)
    f = source.substr(0, source.rfind('/') + 1) + f;
  return f;
}

// The first line of a secret file (trailing spaces and newline dropped), or an error on the key.
std::string secret_file(Ctx& c, const YAML::Node& node, const char* key, const std::string& source) {
  const std::string path = config_relative(source, scalar(c, node, key));
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) {
    if (!c.failed()) c.bad(node, key, "cannot read " + path);
    return {};
  }
  while (!line.empty() && isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  if (line.empty() && !c.failed()) c.bad(node, key, path + " is empty");
  return line;
}

// TLS for the listen addresses, plain HTTP beyond loopback, and remote write's TLS and credentials.
void parse_transport(Ctx& c, const YAML::Node& root, Config& cfg, const std::string& source) {
  auto path = [&](const char* key, std::string& out) {
    if (root[key]) out = config_relative(source, scalar(c, root[key], key));
  };
  path("tls_cert", cfg.tls_cert);
  path("tls_key", cfg.tls_key);
  path("tls_client_ca", cfg.tls_client_ca);
  if (cfg.tls_cert.empty() != cfg.tls_key.empty())
    c.bad(root[cfg.tls_cert.empty() ? "tls_key" : "tls_cert"], "tls_cert",
          "tls_cert and tls_key go together (the certificate and its private key)");
  if (!cfg.tls_client_ca.empty() && cfg.tls_cert.empty())
    c.bad(root["tls_client_ca"], "tls_client_ca", "client certificates need TLS: set tls_cert and tls_key");
  if (root["plain_http"]) cfg.plain_http = boolean(c, root["plain_http"], "plain_http");
  path("remote_write_ca", cfg.remote_write_ca);
  if (root["remote_write_spool"]) {
    const std::string v = scalar(c, root["remote_write_spool"], "remote_write_spool");
    if (v.empty())
      c.bad(root["remote_write_spool"], "remote_write_spool",
            "is empty: give a file path, or off (memory only)");
    cfg.remote_write_spool = v == "off" ? v : config_relative(source, v);
  }
  path("store_ca", cfg.store_ca);
  path("store_cert", cfg.store_cert);
  path("store_key", cfg.store_key);
  if (root["remote_write_bearer_token_file"])
    cfg.remote_write_bearer_token =
        secret_file(c, root["remote_write_bearer_token_file"], "remote_write_bearer_token_file", source);
  if (root["remote_write_username"])
    cfg.remote_write_username = scalar(c, root["remote_write_username"], "remote_write_username");
  if (root["remote_write_password_file"])
    cfg.remote_write_password =
        secret_file(c, root["remote_write_password_file"], "remote_write_password_file", source);
  if (!cfg.remote_write_bearer_token.empty() && !cfg.remote_write_username.empty())
    c.bad(root["remote_write_username"], "remote_write_username",
          "give a bearer token or basic auth for remote write, not both");
  if (cfg.remote_write_username.empty() != cfg.remote_write_password.empty() && !c.failed())
    c.bad(root[cfg.remote_write_username.empty() ? "remote_write_password_file" : "remote_write_username"],
          "remote_write_username", "basic auth needs remote_write_username and remote_write_password_file");
}

}  // namespace

namespace {
// yaml-cpp keeps both entries of a key given twice and a lookup finds the first, so a second
// "window: 30s" further down a long file would be ignored without a word. Refuse it, naming both lines.
Status reject_duplicate_keys(const YAML::Node& node, const std::string& source) {
  if (node.IsSequence()) {
    for (const auto& item : node)
      if (auto st = reject_duplicate_keys(item, source); !st) return st;
  } else if (node.IsMap()) {
    std::map<std::string, YAML::Mark> seen;
    for (const auto& kv : node) {
      if (kv.first.IsScalar()) {
        auto [it, fresh] = seen.emplace(kv.first.Scalar(), kv.first.Mark());
        if (!fresh)
          return fail("{}:{}:{}: key '{}' is given twice (first on line {})", source,
                      kv.first.Mark().line + 1, kv.first.Mark().column + 1, kv.first.Scalar(),
                      it->second.line + 1);
      }
      if (auto st = reject_duplicate_keys(kv.second, source); !st) return st;
    }
  }
  return {};
}
}  // namespace

Result<Config> parse_config(std::string_view text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::ParserException& e) {
    return fail("{}:{}:{}: YAML syntax error: {}", source, e.mark.line + 1, e.mark.column + 1, e.msg);
  } catch (const YAML::Exception& e) {
    return fail("{}: {}", source, e.what());
  }
  Ctx c{source, {}};
  Config cfg;
  if (!root.IsMap()) return fail("{}: the config must be a YAML mapping", source);
  if (auto st = reject_duplicate_keys(root, source); !st) return std::unexpected(st.error());
  try {
    check_keys(c, root, "",
               {"listen",
                "tokens",
                "store",
                "store_startup_timeout",
                "store_ca",
                "store_cert",
                "store_key",
                "retention",
                "remote_write",
                "remote_write_interval",
                "remote_write_queue_windows",
                "remote_write_spool",
                "remote_write_ca",
                "remote_write_bearer_token_file",
                "remote_write_username",
                "remote_write_password_file",
                "tls_cert",
                "tls_key",
                "tls_client_ca",
                "plain_http",
                "window",
                "agent_down_after",
                "report_interval",
                "pinglist_sync",
                "http_threads",
                "http_api_threads",
                "http_max_connections",
                "http_max_connections_per_address",
                "http_idle_timeout",
                "http_header_timeout",
                "http_request_timeout",
                "max_header_bytes",
                "max_body_bytes",
                "max_report_bytes",
                "agent_secret",
                "agent_secret_file",
                "shared_tokens",
                "open_agents",
                "admin_tokens",
                "read_tokens",
                "open_read",
                "protocols",
                "groups",
                "arrows",
                "topology",
                "topology_file"});
    if (root["listen"]) {
      cfg.listen = string_list(c, root["listen"], "listen", true);
      for (size_t i = 0; i < cfg.listen.size(); ++i)
        if (!valid_listen(cfg.listen[i]))
          c.bad(root["listen"], fmt::format("listen[{}]", i),
                fmt::format("'{}' is not HOST:PORT", cfg.listen[i]));
    } else {
      cfg.listen = {"127.0.0.1:8080"};
    }
    parse_credentials(c, root, cfg);
    if (root["store"]) {
      cfg.store = scalar(c, root["store"], "store");
      if (!cfg.store.starts_with("sqlite:") && !cfg.store.starts_with("redis://") &&
          !cfg.store.starts_with("rediss://") && !cfg.store.starts_with("redis+unix://") &&
          !cfg.store.starts_with("redis-cluster://") && !cfg.store.starts_with("rediss-cluster://"))
        c.bad(root["store"], "store",
              fmt::format("'{}': expected sqlite:PATH, redis[s]://HOST:PORT, redis+unix:///PATH or "
                          "redis[s]-cluster://HOST:PORT[,HOST:PORT...] (rediss: TLS)",
                          cfg.store));
    }
    const bool tls_store = cfg.store.starts_with("rediss://") || cfg.store.starts_with("rediss-cluster://");
    for (const char* key : {"store_ca", "store_cert", "store_key"})
      if (root[key] && !tls_store)
        c.bad(root[key], key, "is for a TLS store: use rediss:// or rediss-cluster:// in `store`");
    if (bool(root["store_cert"]) != bool(root["store_key"]))
      c.bad(root[root["store_cert"] ? "store_cert" : "store_key"], "store_cert",
            "store_cert and store_key go together (the client certificate and its private key)");
    if (root["store_startup_timeout"])
      cfg.store_startup_timeout_ns = duration(c, root["store_startup_timeout"], "store_startup_timeout", 0);
    if (root["retention"]) cfg.retention_ns = duration(c, root["retention"], "retention", 60'000'000'000);
    if (root["remote_write"]) {
      cfg.remote_write = scalar(c, root["remote_write"], "remote_write");
      if (!cfg.remote_write.starts_with("http://") && !cfg.remote_write.starts_with("https://"))
        c.bad(root["remote_write"], "remote_write",
              fmt::format("'{}': expected http(s)://HOST:PORT/PATH (e.g. Prometheus' /api/v1/write)",
                          cfg.remote_write));
    }
    parse_transport(c, root, cfg, source);
    if (root["remote_write_interval"])
      cfg.remote_write_interval_ns =
          duration(c, root["remote_write_interval"], "remote_write_interval", 1'000'000'000);
    if (root["remote_write_queue_windows"])
      cfg.remote_write_queue_windows =
          integer(c, root["remote_write_queue_windows"], "remote_write_queue_windows", 1000, 100'000'000);
    if (root["window"]) cfg.window_ns = duration(c, root["window"], "window", 100'000'000);
    if (root["agent_down_after"])
      cfg.agent_down_after_ns = duration(c, root["agent_down_after"], "agent_down_after", 1'000'000'000);
    if (root["report_interval"])
      cfg.report_interval_ns = duration(c, root["report_interval"], "report_interval", 100'000'000);
    if (root["pinglist_sync"])
      cfg.pinglist_sync_ns = duration(c, root["pinglist_sync"], "pinglist_sync", 500'000'000);
    if (root["http_threads"]) cfg.http_threads = integer(c, root["http_threads"], "http_threads", 1, 256);
    if (root["http_api_threads"])
      cfg.http_api_threads = integer(c, root["http_api_threads"], "http_api_threads", 1, 256);
    if (root["http_max_connections"])
      cfg.http_max_connections =
          integer(c, root["http_max_connections"], "http_max_connections", 16, 1'000'000);
    if (root["http_max_connections_per_address"])
      cfg.http_max_connections_per_address = integer(c, root["http_max_connections_per_address"],
                                                     "http_max_connections_per_address", 1, 1'000'000);
    if (root["http_idle_timeout"])
      cfg.http_idle_timeout_ns = duration(c, root["http_idle_timeout"], "http_idle_timeout", 1'000'000'000);
    if (root["http_header_timeout"])
      cfg.http_header_timeout_ns =
          duration(c, root["http_header_timeout"], "http_header_timeout", 100'000'000);
    if (root["http_request_timeout"])
      cfg.http_request_timeout_ns =
          duration(c, root["http_request_timeout"], "http_request_timeout", 100'000'000);
    if (root["max_header_bytes"])
      cfg.max_header_bytes = integer(c, root["max_header_bytes"], "max_header_bytes", 1024, 1u << 20);
    if (root["max_body_bytes"])
      cfg.max_body_bytes = integer(c, root["max_body_bytes"], "max_body_bytes", 1024, 1ull << 30);
    if (root["max_report_bytes"])
      cfg.max_report_bytes = integer(c, root["max_report_bytes"], "max_report_bytes", 1024, 1ull << 30);

    const YAML::Node protos = root["protocols"];
    if (protos) {
      if (!protos.IsMap())
        c.bad(protos, "protocols", "expected a mapping of protocol name -> settings");
      else
        for (auto it = protos.begin(); it != protos.end() && !c.failed(); ++it) {
          std::string name = it->first.Scalar();
          std::string field = "protocols." + name;
          auto p = proto::parse_protocol(name);
          if (!p) {
            c.bad(it->first, field, p.error().message);
            break;
          }
          ProtocolPlan pp;
          pp.protocol = *p;
          const YAML::Node v = it->second;  // a copy: the iterator hands out a temporary
          if (v.IsNull()) {
            cfg.protocols.push_back(pp);
            continue;
          }
          if (!v.IsMap()) {
            c.bad(v, field, "expected a mapping (interval, timeout, flows)");
            break;
          }
          check_keys(c, v, field, {"interval", "timeout", "flows"});
          if (v["interval"]) pp.interval_ns = duration(c, v["interval"], field + ".interval", 1'000'000);
          if (v["timeout"]) pp.timeout_ns = duration(c, v["timeout"], field + ".timeout", 1'000'000);
          if (v["flows"]) {
            pp.flows =
                static_cast<uint32_t>(integer(c, v["flows"], field + ".flows", 1, proto::kMaxFlowsPerWindow));
            if (pp.flows > 1 && pp.protocol != proto::Protocol::udp && !c.failed())
              c.bad(v["flows"], field + ".flows",
                    "only udp probes several flows per target (tcp connect probes already use a new source "
                    "port "
                    "each; rdma: docs/probe.md \"Flows\")");
          }
          cfg.protocols.push_back(pp);
        }
    }

    std::set<std::string> names;
    const YAML::Node groups = root["groups"];
    if (groups) {
      if (!groups.IsSequence()) c.bad(groups, "groups", "expected a list of groups");
      for (size_t i = 0; groups.IsSequence() && i < groups.size() && !c.failed(); ++i) {
        const YAML::Node g = groups[i];
        std::string field = fmt::format("groups[{}]", i);
        if (!g.IsMap()) {
          c.bad(g, field, "expected a mapping (name, protocols, members)");
          break;
        }
        check_keys(c, g, field, {"name", "protocols", "members"});
        GroupRule r;
        if (!g["name"])
          c.bad(g, field + ".name", "missing");
        else
          r.name = scalar(c, g["name"], field + ".name");
        if (!c.failed() && !proto::valid_plain_name(r.name))
          c.bad(g["name"], field + ".name", fmt::format("'{}' is not a valid name", r.name));
        if (!c.failed() && !names.insert(r.name).second)
          c.bad(g["name"], field + ".name", fmt::format("'{}' is used twice", r.name));
        if (!g["protocols"])
          c.bad(g, field + ".protocols", "missing");
        else
          r.protocols = protocol_list(c, g["protocols"], field + ".protocols");
        if (!g["members"])
          c.bad(g, field + ".members", "missing");
        else
          r.members = patterns(c, g["members"], field + ".members");
        cfg.groups.push_back(std::move(r));
      }
    }
    const YAML::Node arrows = root["arrows"];
    if (arrows) {
      if (!arrows.IsSequence()) c.bad(arrows, "arrows", "expected a list of arrow rules");
      for (size_t i = 0; arrows.IsSequence() && i < arrows.size() && !c.failed(); ++i) {
        const YAML::Node a = arrows[i];
        std::string field = fmt::format("arrows[{}]", i);
        if (!a.IsMap()) {
          c.bad(a, field, "expected a mapping (name, protocols, from, to)");
          break;
        }
        check_keys(c, a, field, {"name", "protocols", "from", "to"});
        ArrowRule r;
        if (a["name"])
          r.name = scalar(c, a["name"], field + ".name");
        else
          r.name = fmt::format("arrow{}", i);
        if (!c.failed() && !proto::valid_plain_name(r.name))
          c.bad(a["name"], field + ".name", fmt::format("'{}' is not a valid name", r.name));
        if (!c.failed() && !names.insert(r.name).second)
          c.bad(a["name"], field + ".name", fmt::format("'{}' is used twice", r.name));
        if (!a["protocols"])
          c.bad(a, field + ".protocols", "missing");
        else
          r.protocols = protocol_list(c, a["protocols"], field + ".protocols");
        if (!a["from"])
          c.bad(a, field + ".from", "missing");
        else
          r.from = patterns(c, a["from"], field + ".from");
        if (!a["to"])
          c.bad(a, field + ".to", "missing");
        else
          r.to = patterns(c, a["to"], field + ".to");
        cfg.arrows.push_back(std::move(r));
      }
    }
    if (root["topology"] && root["topology_file"])
      c.bad(root["topology_file"], "topology_file", "give either topology or topology_file, not both");
    if (!c.failed() && root["topology"]) {
      auto t = parse_topology(root["topology"], source);
      if (!t)
        c.error = t.error().message;
      else
        cfg.topology = std::make_shared<const Topology>(std::move(*t));
    }
    if (!c.failed() && root["topology_file"]) {
      std::string f = config_relative(source, scalar(c, root["topology_file"], "topology_file"));
      cfg.topology_file = f;
      if (!c.failed()) {
        auto t = load_topology(f);
        if (!t)
          c.bad(root["topology_file"], "topology_file", t.error().message);
        else
          cfg.topology = std::make_shared<const Topology>(std::move(*t));
      }
    }
    // Every protocol a rule uses needs a plan; add the default plan rather than failing.
    auto ensure = [&](proto::Protocol p) {
      if (!cfg.plan(p)) cfg.protocols.push_back(ProtocolPlan{p});
    };
    for (const auto& g : cfg.groups)
      for (auto p : g.protocols) ensure(p);
    for (const auto& a : cfg.arrows)
      for (auto p : a.protocols) ensure(p);
    for (const auto& pp : cfg.protocols)
      if (pp.timeout_ns >= cfg.window_ns && !c.failed())
        c.bad(root["protocols"], fmt::format("protocols.{}.timeout", proto::to_string(pp.protocol)),
              "must be shorter than the window");
  } catch (const YAML::Exception& e) {
    // yaml-cpp throws on some conversions of odd documents; report it, never propagate.
    return fail("{}:{}:{}: {}", source, e.mark.line + 1, e.mark.column + 1, e.msg);
  }
  if (c.failed()) return fail("{}", c.error);
  if (auto st = check_credentials(cfg); !st) return fail("{}: {}", source, st.error().message);
  return cfg;
}

Result<Config> load_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail_errno(fmt::format("cannot read config {}", path));
  std::stringstream ss;
  ss << in.rdbuf();
  auto cfg = parse_config(ss.str(), path);
  if (cfg) cfg->path = path;
  return cfg;
}

}  // namespace weft::controller
