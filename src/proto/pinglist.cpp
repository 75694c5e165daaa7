#include "proto/pinglist.hpp"

#include <arpa/inet.h>

#include <nlohmann/json.hpp>

#include "proto/json_fields.hpp"
#include "proto/names.hpp"
#include "proto/window_stats.hpp"
#include "proto/wire_duration.hpp"

namespace weft::proto {
namespace {

using nlohmann::json;

// More targets than any mesh has (rails included): a bound on what one answer may allocate.
constexpr size_t kMaxTargetsPerProtocol = 1'000'000;

json content(const Pinglist& p) {
  json protos = json::array();
  for (const auto& pp : p.protocols) {
    json targets = json::array();
    for (const auto& t : pp.targets) {
      json tj{{"name", t.name}, {"host", t.host}, {"port", t.port}};
      if (t.rdma) {
        tj["rail"] = t.rail;
        tj["rdma"] = rdma_endpoint_json(*t.rdma);
      }
      targets.push_back(std::move(tj));
    }
    json pj{{"protocol", to_string(pp.protocol)}, {"targets", std::move(targets)}};
    put_duration(pj, kProbeIntervalField, pp.interval);
    put_duration(pj, kProbeTimeoutField, pp.timeout);
    if (pp.flows != 1) pj["flows"] = pp.flows;
    protos.push_back(std::move(pj));
  }
  json j{{"protocols", std::move(protos)}};
  put_duration(j, kWindowField, p.window);
  put_duration(j, kReportIntervalField, p.report_interval);
  put_duration(j, kSyncIntervalField, p.sync_interval);
  return j;
}

bool is_ip_literal(const std::string& s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

Result<PinglistTarget> decode_target(const json& t, Protocol protocol) {
  if (!t.is_object()) return fail("expected an object {{name, host, port}}");
  PinglistTarget out;
  auto name = string_field(t, "name", kMaxNameLength);
  if (!name) return unexpected(name.error());
  if (!valid_host_name(*name)) return fail("name: '{}' is not a host name", name->substr(0, 64));
  out.name = std::move(*name);
  auto host = string_field(t, "host", kMaxNameLength);
  if (!host) return unexpected(host.error());
  if (!is_ip_literal(*host)) return fail("host: '{}' is not an IPv4 or IPv6 address", host->substr(0, 64));
  out.host = std::move(*host);
  const bool rdma = protocol == Protocol::rdma;
  auto port = unsigned_field(t, "port", rdma ? 0 : 1, 65535);  // rdma targets are reached by QPN
  if (!port) return unexpected(port.error());
  out.port = static_cast<uint16_t>(*port);
  if (!rdma) {
    if (t.contains("rail") || t.contains("rdma")) return fail("rail, rdma: only in rdma targets");
    return out;
  }
  auto rail = optional_unsigned_field(t, "rail", 0, kMaxRdmaEndpoints - 1, 0);
  if (!rail) return unexpected(rail.error());
  out.rail = static_cast<uint32_t>(*rail);
  auto ep = t.find("rdma");
  if (ep == t.end()) return fail("rdma: missing (the peer's RDMA address)");
  auto e = parse_rdma_endpoint(*ep);
  if (!e) return fail("rdma: {}", e.error().message);
  out.rdma = std::move(*e);
  return out;
}

Result<ProtocolPinglist> decode_protocol(const json& pj) {
  if (!pj.is_object()) return fail("expected an object {{protocol, interval_ns, timeout_ns, targets}}");
  ProtocolPinglist out;
  auto name = string_field(pj, "protocol", 16);
  if (!name) return unexpected(name.error());
  auto protocol = parse_protocol(*name);
  if (!protocol) return fail("protocol: {}", protocol.error().message);
  out.protocol = *protocol;
  auto interval = duration_field(pj, kProbeIntervalField);
  if (!interval) return unexpected(interval.error());
  out.interval = *interval;
  auto timeout = duration_field(pj, kProbeTimeoutField);
  if (!timeout) return unexpected(timeout.error());
  out.timeout = *timeout;
  auto flows = optional_unsigned_field(pj, "flows", 1, kMaxFlowsPerWindow, 1);
  if (!flows) return unexpected(flows.error());
  out.flows = static_cast<uint32_t>(*flows);
  auto targets = pj.find("targets");
  if (targets == pj.end() || !targets->is_array()) return fail("targets: expected a list");
  if (targets->size() > kMaxTargetsPerProtocol)
    return fail("targets: more than {} targets", kMaxTargetsPerProtocol);
  out.targets.reserve(targets->size());
  for (size_t i = 0; i < targets->size(); ++i) {
    auto t = decode_target((*targets)[i], out.protocol);
    if (!t) return fail("targets[{}]: {}", i, t.error().message);
    out.targets.push_back(std::move(*t));
  }
  return out;
}

}  // namespace

std::string pinglist_content_json(const Pinglist& p) { return content(p).dump(); }

std::string pinglist_json(const Pinglist& p) {
  auto j = content(p);
  j["version"] = p.version;
  return j.dump();
}

std::string pinglist_unchanged_json(uint64_t version) {
  return json{{"version", version}, {"unchanged", true}}.dump();
}

Result<PinglistAnswer> decode_pinglist(std::string_view body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return fail("pinglist: not valid JSON");
  if (!j.is_object()) return fail("pinglist: expected a JSON object");
  PinglistAnswer out;
  auto version = unsigned_field(j, "version", 0, UINT64_MAX);
  if (!version) return fail("pinglist: {}", version.error().message);
  out.pinglist.version = *version;
  if (auto u = j.find("unchanged"); u != j.end()) {
    if (!u->is_boolean()) return fail("pinglist: unchanged: expected true or false");
    if (u->get<bool>()) {
      out.unchanged = true;
      return out;
    }
  }
  for (auto [f, field] : {std::pair{&kWindowField, &out.pinglist.window},
                          std::pair{&kReportIntervalField, &out.pinglist.report_interval},
                          std::pair{&kSyncIntervalField, &out.pinglist.sync_interval}}) {
    auto d = duration_field(j, *f);
    if (!d) return fail("pinglist: {}", d.error().message);
    *field = *d;
  }
  auto protos = j.find("protocols");
  if (protos == j.end() || !protos->is_array()) return fail("pinglist: protocols: expected a list");
  for (size_t i = 0; i < protos->size(); ++i) {
    // A protocol this agent does not know (a newer controller's) is skipped, not an error, so a
    // controller upgrade never stops older agents from probing what they can.
    const auto& entry = (*protos)[i];
    if (auto n = entry.is_object() ? entry.find("protocol") : entry.end();
        entry.is_object() && n != entry.end() && n->is_string() &&
        !parse_protocol(n->get_ref<const std::string&>())) {
      out.skipped_protocols.push_back(n->get_ref<const std::string&>().substr(0, 16));
      continue;
    }
    auto pp = decode_protocol(entry);
    if (!pp) return fail("pinglist: protocols[{}]: {}", i, pp.error().message);
    for (const auto& seen : out.pinglist.protocols)
      if (seen.protocol == pp->protocol)
        return fail("pinglist: protocols[{}]: {} is listed twice", i, to_string(pp->protocol));
    out.pinglist.protocols.push_back(std::move(*pp));
  }
  return out;
}

}  // namespace weft::proto
