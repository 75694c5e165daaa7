// `weft agent --controller URL --token T [--name N] [--rdma DEVICE[:IP]]... [--hw-timestamps IFACE]...`:
// the mesh monitor's agent (docs/controller.md, docs/rdma-probes.md, docs/probe.md).
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include "agent/agent.hpp"
#include "base/log.hpp"
#include "cli/command_registry.hpp"
#include "cli/hw_timestamps.hpp"
#include "controller/auth.hpp"

namespace {

struct Options {
  weft::agent::AgentConfig cfg;
  std::vector<std::string> protocols{"udp", "tcp"};
  std::string token_file;
  int tcp_idle_s = 60;
  std::vector<std::string> rdma;  // DEVICE[:IPV4], one engine each
  unsigned rdma_tclass = 0;
  unsigned rdma_sl = 0;
  std::vector<std::string> hw_interfaces;  // NICs whose hardware timestamps are switched on first
};

// "DEVICE" or "DEVICE:IPV4" (the address whose RoCE v2 GID the engine uses; without it the first
// IPv4 GID of the device, or GID 0 on InfiniBand).
bool parse_rdma_option(const std::string& text, const Options& o, weft::probe::RdmaEngineConfig& out) {
  auto colon = text.find(':');
  out.device = text.substr(0, colon);
  if (colon != std::string::npos) out.address = text.substr(colon + 1);
  if (out.device.empty() || (colon != std::string::npos && out.address.empty())) return false;
  out.traffic_class = static_cast<uint8_t>(o.rdma_tclass);
  out.sl = static_cast<uint8_t>(o.rdma_sl);
  return true;
}

int run_agent(Options o) {
  // TLS files are read at the first request; a missing one is said now, not as a handshake failure.
  for (const auto& [flag, path] :
       {std::pair{"--ca", &o.cfg.tls.ca_file}, std::pair{"--cert", &o.cfg.tls.cert_file},
        std::pair{"--key", &o.cfg.tls.key_file}})
    if (!path->empty() && ::access(path->c_str(), R_OK) != 0) {
      fmt::print(stderr, "weft agent: {}: cannot read {}\n", flag, *path);
      return 2;
    }
  if (o.cfg.tls.cert_file.empty() != o.cfg.tls.key_file.empty()) {
    fmt::print(stderr, "weft agent: --cert and --key go together (a client certificate and its key)\n");
    return 2;
  }
  if (!o.token_file.empty()) {
    FILE* f = fopen(o.token_file.c_str(), "r");
    if (!f) {
      fmt::print(stderr, "weft agent: cannot read token file {}\n", o.token_file);
      return 2;
    }
    char buf[512] = {};
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    o.cfg.token.assign(buf, n);
    while (!o.cfg.token.empty() && isspace(static_cast<unsigned char>(o.cfg.token.back())))
      o.cfg.token.pop_back();
  }
  // A per-agent token is bound to a name (controller/auth.hpp): it names the agent unless --name
  // does, and a --name it does not match would be refused by the controller (403) on every request.
  const std::string bearer = "Bearer " + o.cfg.token;  // outlives `bound`, a view into it
  if (auto bound = weft::controller::bound_agent_name(bearer); !bound.empty()) {
    if (o.cfg.name.empty()) {
      o.cfg.name = bound;
    } else if (o.cfg.name != bound) {
      fmt::print(stderr, "weft agent: the token is agent '{}''s, but --name is '{}'\n", bound, o.cfg.name);
      return 2;
    }
  }
  o.cfg.protocols.clear();
  for (const auto& p : o.protocols) {
    auto pp = weft::proto::parse_protocol(p);
    if (!pp) {
      fmt::print(stderr, "weft agent: --protocols: {}\n", pp.error().message);
      return 2;
    }
    o.cfg.protocols.push_back(*pp);
  }
  for (const auto& r : o.rdma) {
    weft::probe::RdmaEngineConfig ec;
    if (!parse_rdma_option(r, o, ec)) {
      fmt::print(stderr, "weft agent: --rdma '{}': expected DEVICE or DEVICE:IPV4 (e.g. mlx5_0:10.0.0.1)\n",
                 r);
      return 2;
    }
    o.cfg.rdma.push_back(std::move(ec));
  }
  // Before anything starts: the probers' and responders' sockets then get the NIC's stamps from
  // their first packet. A NIC that cannot stamp is an error, as in `weft ping` and `weft responder`.
  if (!weft::cli::enable_hw_timestamps(o.hw_interfaces, "agent")) return 1;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  o.cfg.tcp_idle_timeout = std::chrono::seconds(o.tcp_idle_s);
  weft::agent::Agent agent(o.cfg);
  if (auto st = agent.start(); !st) {
    fmt::print(stderr, "weft agent: {}\n", st.error().message);
    return 1;
  }
  int sig = 0;
  sigwait(&set, &sig);
  weft::log().info("signal {}: stopping", sig);
  agent.stop();
  auto s = agent.stats();
  weft::log().info("agent stopped: {} windows made, {} delivered, {} waiting (spooled), {} dropped",
                   s.windows_made, s.windows_delivered, s.pending_windows, s.dropped_windows);
  return 0;
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto* sub =
      root.app.add_subcommand("agent", "Run the mesh monitor's agent (probes its pinglist, reports windows)");
  auto o = std::make_shared<Options>();
  sub->add_option("--controller", o->cfg.controller_url,
                  "Controller URL, http(s)://HOST:PORT (several, comma-separated: replicas to fail over to)")
      ->required();
  sub->add_option("--ca", o->cfg.tls.ca_file,
                  "https://: verify the controller's certificate against this CA file (PEM; default: the "
                  "system's CAs)");
  sub->add_option("--cert", o->cfg.tls.cert_file,
                  "https://: this agent's client certificate (PEM; mutual TLS: it must name the agent)");
  sub->add_option("--key", o->cfg.tls.key_file, "https://: the client certificate's private key (PEM)");
  sub->add_option("--token", o->cfg.token, "Agent token (see the controller's 'tokens')");
  sub->add_option("--token-file", o->token_file, "Read the token from this file instead");
  sub->add_option("--name", o->cfg.name, "Host name to register as (default: this host's name)");
  sub->add_option("--address", o->cfg.address,
                  "Address to probe from and answer on (default: the one that routes to the controller)");
  sub->add_option("--udp-port", o->cfg.udp_port, "UDP responder port")->capture_default_str();
  sub->add_option("--tcp-port", o->cfg.tcp_port, "TCP responder port")->capture_default_str();
  sub->add_option("--tcp-idle-timeout", o->tcp_idle_s,
                  "Seconds a TCP connection to the responder may stay silent before it is closed")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  sub->add_option("--protocols", o->protocols, "Protocols to probe and answer")->capture_default_str();
  sub->add_option(
      "--rdma", o->rdma,
      "Run an RDMA probe engine on DEVICE[:IPV4] (repeatable: rail 0, 1, ...; adds protocol rdma)");
  sub->add_option("--rdma-tclass", o->rdma_tclass, "RDMA: GRH traffic class of every send (DSCP << 2)")
      ->check(CLI::Range(0, 255))
      ->capture_default_str();
  sub->add_option("--rdma-sl", o->rdma_sl, "RDMA: service level")
      ->check(CLI::Range(0, 15))
      ->capture_default_str();
  sub->add_option("--hw-timestamps", o->hw_interfaces,
                  "Switch this interface's NIC hardware timestamps on first (root; left alone if already on; "
                  "repeatable for several NICs)");
  sub->add_option("--spool-dir", o->cfg.outbox.spool_dir,
                  "Spool undelivered windows here (default: memory only)");
  sub->add_option("--memory-windows", o->cfg.outbox.memory_windows, "Windows kept in memory before spooling")
      ->capture_default_str();
  sub->add_option("--spool-max-bytes", o->cfg.outbox.spool_max_bytes,
                  "Spool size cap; the oldest batches go first")
      ->capture_default_str();
  sub->callback([o] { weft::cli::set_exit_code(run_agent(*o)); });
}};

}  // namespace
