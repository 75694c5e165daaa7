// `weft mesh --controller URL --protocol P [--group G] [--agents] [--token T] [--ca FILE]`: the controller's
// latest mesh (and agents) as plain lines, one per pair, for a terminal or a shell script (the Soft-RoCE
// guest has no curl and no JSON tool). Exit 0 when the controller answered, 1 when not.
//
//   pair SRC DST sent=N received=N lost=N loss=R p50_us=X window_start=S age_s=A
//   agent NAME state=up|down protocols=udp,rdma rdma_rails=N last_seen_age_s=A
#include <fmt/format.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "agent/controller_client.hpp"
#include "agent/controller_url.hpp"
#include "cli/command_registry.hpp"

namespace {

using nlohmann::json;

struct Options {
  std::string controller = "http://127.0.0.1:8080";
  std::string protocol = "udp";
  std::string group;
  bool agents = false;
  std::string token;  // a read token (beyond loopback the read API needs one)
  weft::agent::ControllerTls tls;
};

std::string num(const json& j, const char* key, const char* fmt_spec = "{}") {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "-";
  if (it->is_number_float()) return fmt::format(fmt::runtime(fmt_spec), it->get<double>());
  return it->dump();
}

int get(weft::agent::ControllerClient& c, const std::string& path, json& out) {
  auto res = c.get(path);
  if (res.status == 0) {
    fmt::print(stderr, "weft mesh: controller unreachable: {}\n", res.error);
    return 1;
  }
  out = json::parse(res.body, nullptr, false);
  if (res.status != 200) {
    fmt::print(stderr, "weft mesh: HTTP {}: {}\n", res.status,
               out.is_object() && out.contains("error") ? out["error"].dump() : res.body.substr(0, 200));
    return 1;
  }
  if (!out.is_object()) {
    fmt::print(stderr, "weft mesh: the controller's answer is not a JSON object\n");
    return 1;
  }
  return 0;
}

int run_mesh(const Options& o) {
  auto url = weft::agent::parse_controller_url(o.controller);
  if (!url) {
    fmt::print(stderr, "weft mesh: --controller: {}\n", url.error().message);
    return 2;
  }
  weft::agent::ControllerClient c;
  c.open({*url}, o.token, o.tls);
  json mesh;
  std::string path = fmt::format("/api/v1/mesh?protocol={}", httplib::detail::encode_query_param(o.protocol));
  if (!o.group.empty()) path += "&group=" + httplib::detail::encode_query_param(o.group);
  if (int rc = get(c, path, mesh)) return rc;
  for (const auto& p : mesh.value("pairs", json::array())) {
    const json& net = p.contains("network_rtt_us") ? p["network_rtt_us"] : json::object();
    fmt::print("pair {} {} sent={} received={} lost={} loss={} p50_us={} window_start={} age_s={}\n",
               p.value("src", "?"), p.value("dst", "?"), num(p, "sent"), num(p, "received"), num(p, "lost"),
               num(p, "loss_ratio", "{:.4f}"), num(net, "p50", "{:.1f}"), num(p, "window_start", "{:.3f}"),
               num(p, "age_s", "{:.1f}"));
  }
  if (!o.agents) return 0;
  json agents;
  if (int rc = get(c, "/api/v1/agents", agents)) return rc;
  for (const auto& a : agents.value("agents", json::array())) {
    std::string protos;
    for (const auto& p : a.value("protocols", json::array()))
      protos += (protos.empty() ? "" : ",") + p.get<std::string>();
    fmt::print("agent {} state={} protocols={} rdma_rails={} last_seen_age_s={}\n", a.value("name", "?"),
               a.value("state", "?"), protos, a.value("rdma", json::array()).size(),
               num(a, "last_seen_age_s", "{:.1f}"));
  }
  return 0;
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto* sub = root.app.add_subcommand(
      "mesh", "Print the controller's latest mesh (one line per pair) and its agents");
  auto o = std::make_shared<Options>();
  sub->add_option("--controller", o->controller, "Controller URL, http(s)://HOST:PORT")
      ->capture_default_str();
  sub->add_option("--token", o->token, "A read token (Authorization: Bearer)");
  sub->add_option("--ca", o->tls.ca_file, "https://: verify the controller against this CA file (PEM)");
  sub->add_option("--cert", o->tls.cert_file, "https://: a client certificate (PEM; mutual TLS)");
  sub->add_option("--key", o->tls.key_file, "https://: the client certificate's key (PEM)");
  sub->add_option("--protocol,-p", o->protocol, "udp, tcp or rdma")->capture_default_str();
  sub->add_option("--group,-g", o->group, "Only this group's (or arrow rule's) pairs");
  sub->add_flag("--agents", o->agents, "Also print one line per agent (state, protocols, RDMA rails)");
  sub->callback([o] { weft::cli::set_exit_code(run_mesh(*o)); });
}};

}  // namespace
