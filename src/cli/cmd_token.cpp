// `weft token agent NAME --config weft.yaml` (or --secret-file FILE): prints agent NAME's own token,
// HMAC-SHA256 of the name under the controller's agent secret (controller/auth.hpp). Give it to
// that agent only (`weft agent --token-file`): it is good for that name and no other.
#include <fmt/format.h>

#include <fstream>

#include "cli/command_registry.hpp"
#include "controller/auth.hpp"
#include "controller/config.hpp"
#include "proto/names.hpp"

namespace {

struct Options {
  std::string name, config, secret_file;
};

int run_token(const Options& o) {
  if (!weft::proto::valid_host_name(o.name)) {
    fmt::print(stderr, "weft token: '{}' is not an agent name (letters, digits, - _ . :)\n", o.name);
    return 2;
  }
  std::string secret;
  if (!o.config.empty()) {
    auto cfg = weft::controller::load_config(o.config);
    if (!cfg) {
      fmt::print(stderr, "weft token: {}\n", cfg.error().message);
      return 2;
    }
    if (cfg->agent_secrets.empty()) {
      fmt::print(stderr, "weft token: {} has no agent_secret or agent_secret_file\n", o.config);
      return 2;
    }
    secret = cfg->agent_secrets.front();
  } else {
    std::ifstream in(o.secret_file);
    for (std::string line; std::getline(in, line);) {
      while (!line.empty() && isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
      if (!line.empty() && line[0] != '#') {
        secret = line;
        break;
      }
    }
    if (secret.size() < 16) {
      fmt::print(stderr, "weft token: no secret of at least 16 characters in {}\n", o.secret_file);
      return 2;
    }
  }
  fmt::print("{}\n", weft::controller::agent_token(secret, o.name));
  return 0;
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto* tok = root.app.add_subcommand("token", "Credentials for the controller (docs/deploy.md)");
  tok->require_subcommand(1);
  auto o = std::make_shared<Options>();
  auto* sub = tok->add_subcommand("agent", "Print one agent's own token (bound to its name)");
  sub->add_option("name", o->name, "The agent's name (its --name, by default the host name)")->required();
  auto* c = sub->add_option("--config,-c", o->config, "The controller's config (its agent secret)");
  auto* f = sub->add_option("--secret-file", o->secret_file, "The agent secret file itself");
  c->excludes(f);
  sub->callback([o, c, f] {
    if (c->count() == 0 && f->count() == 0) {
      fmt::print(stderr, "weft token agent: give --config or --secret-file\n");
      weft::cli::set_exit_code(2);
      return;
    }
    weft::cli::set_exit_code(run_token(*o));
  });
}};

}  // namespace
