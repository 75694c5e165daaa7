#include "proto/registration.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "proto/names.hpp"

namespace weft::proto {

std::string registration_json(const Registration& r) {
  nlohmann::json j{{"name", r.name},
                   {"addresses", r.addresses},
                   {"version", r.version},
                   {"udp_port", r.udp_port},
                   {"tcp_port", r.tcp_port}};
  j["protocols"] = nlohmann::json::array();
  for (auto p : r.protocols) j["protocols"].push_back(to_string(p));
  if (!r.rdma.empty()) {
    j["rdma"] = nlohmann::json::array();
    for (const auto& e : r.rdma) j["rdma"].push_back(rdma_endpoint_json(e));
  }
  return j.dump();
}

namespace {
// Peers probe these addresses as they are: anything but a literal IPv4 or IPv6 address would only
// fail later, on every peer, as loss.
bool is_ip_literal(const std::string& s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}
}  // namespace

Result<Registration> parse_registration(std::string_view body) {
  using nlohmann::json;
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return fail("body must be a JSON object");
  Registration r;
  auto str = [&](const char* k, std::string& out) -> bool {
    auto it = j.find(k);
    if (it == j.end() || !it->is_string()) return false;
    out = it->get<std::string>();
    return true;
  };
  if (!str("name", r.name) || !valid_host_name(r.name)) return fail("name: required, a host name");
  if (j.contains("version") && (!str("version", r.version) || r.version.size() > 64))
    return fail("version: a string of at most 64 bytes");
  auto addrs = j.find("addresses");
  if (addrs == j.end() || !addrs->is_array() || addrs->empty() || addrs->size() > 16)
    return fail("addresses: required, a list of 1 to 16 addresses");
  for (size_t i = 0; i < addrs->size(); ++i) {
    const auto& a = (*addrs)[i];
    if (!a.is_string() || a.get_ref<const std::string&>().size() > 64 || !is_ip_literal(a.get<std::string>()))
      return fail("addresses[{}]: {} is not an IPv4 or IPv6 address", i, a.dump().substr(0, 66));
    r.addresses.push_back(a.get<std::string>());
  }
  auto protos = j.find("protocols");
  if (protos == j.end() || !protos->is_array() || protos->size() > 3)
    return fail("protocols: required, a list");
  for (const auto& p : *protos) {
    if (!p.is_string()) return fail("protocols: each must be a string");
    auto pp = parse_protocol(p.get<std::string>());
    if (!pp) return fail("protocols: {}", pp.error().message);
    r.protocols.push_back(*pp);
  }
  for (auto [key, port] : {std::pair{"udp_port", &r.udp_port}, std::pair{"tcp_port", &r.tcp_port}}) {
    auto it = j.find(key);
    if (it == j.end()) continue;
    if (!it->is_number_unsigned() || it->get<uint64_t>() > 65535) return fail("{}: 0..65535", key);
    *port = static_cast<uint16_t>(it->get<uint64_t>());
  }
  if (auto rd = j.find("rdma"); rd != j.end()) {
    if (!rd->is_array() || rd->size() > kMaxRdmaEndpoints)
      return fail(
          "rdma: a list of at most {} RDMA addresses {{device, port, gid, gid_index, lid, qpn, qkey}}",
          kMaxRdmaEndpoints);
    if (!rd->empty() &&
        std::find(r.protocols.begin(), r.protocols.end(), Protocol::rdma) == r.protocols.end())
      return fail("rdma: RDMA addresses given, but 'rdma' is not among the protocols");
    for (size_t i = 0; i < rd->size(); ++i) {
      auto e = parse_rdma_endpoint((*rd)[i]);
      if (!e) return fail("rdma[{}]: {}", i, e.error().message);
      r.rdma.push_back(std::move(*e));
    }
  }
  return r;
}

}  // namespace weft::proto
