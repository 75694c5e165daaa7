#pragma once
// Who is asking: the controller's credentials (docs/controller.md "Credentials").
//
//  - Agents: a per-agent token, `NAME.HEX`, where HEX is HMAC-SHA256(agent secret, NAME) (64 hex
//    digits). It is bound to the agent's name: the controller accepts it only for that agent's own
//    registration, pinglist and reports. It is derived, not stored, so every controller replica that
//    holds the secret agrees on it without shared state, a new agent needs no controller change,
//    and the controller keeps no list of agents' tokens to leak. `weft token agent NAME` prints one.
//    The secret file may hold several secrets (one a line): the first issues tokens, every one is
//    accepted (rotating the secret without a flag day).
//  - Legacy shared `tokens` (one token for every agent) only with `shared_tokens: true`: such a
//    token is not bound to a name (any holder can write as any agent), hence the warning.
//  - Admin tokens (`admin_tokens`): forced removal of an agent. Agents never hold one.
//  - Read tokens (`read_tokens`): the read API, the dashboard and /metrics. Read access is open
//    without them only when every `listen` address is loopback, or with `open_read: true` (an
//    authenticating reverse proxy in front, docs/deploy.md).
// A token goes in `Authorization: Bearer TOKEN`, or as the password of HTTP Basic (any user name),
// which is what browsers (the dashboard) and Prometheus' basic_auth send.
#include <string>
#include <string_view>

#include "controller/config.hpp"

namespace weft::controller {

enum class Role : uint8_t { none, agent, shared_agent, reader, admin };

struct Principal {
  Role role = Role::none;
  std::string agent;  // Role::agent: the name its token is bound to
};

// The per-agent token of `name` under `secret`: "NAME.HEX".
std::string agent_token(std::string_view secret, std::string_view name);

// Who the Authorization header value names (Role::none: no header, or nothing it matches).
Principal identify(const Config& cfg, std::string_view authorization);

// The agent name a per-agent token in `authorization` carries, without checking its MAC: only for a
// request whose head check (identify) already accepted it. "" for any other credential.
std::string_view bound_agent_name(std::string_view authorization);

// Every listen address is a loopback one (127.0.0.0/8, ::1, localhost).
bool loopback_only(const Config& cfg);
// Agent endpoints need a credential (an agent secret or shared tokens are configured).
bool agent_auth_on(const Config& cfg);
// The read API answers without a credential.
bool read_open(const Config& cfg);
// Admin routes answer without a credential: no credential of any kind is configured and the
// controller listens on loopback only (a single-machine trial, `weft demo` on loopback).
bool admin_open(const Config& cfg);

// Checks the credential settings of a parsed config against its listen addresses (parse_config
// calls it): shared tokens without shared_tokens: true, or endpoints open on a non-loopback address
// without saying so, are errors that say what to set.
Status check_credentials(const Config& cfg);
// Logs what the config leaves open or weak (shared tokens, open endpoints beyond loopback), at start
// and after a reload.
void warn_about_credentials(const Config& cfg);

}  // namespace weft::controller
