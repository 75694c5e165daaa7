#include "agent/rdma_endpoint.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

namespace weft::agent {
namespace {

using nlohmann::json;

constexpr uint32_t kMaxQpn = 0xFFFFFF;  // QPNs are 24 bits; 0 and 1 are the special QPs

bool valid_device_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
           ch == '-' || ch == '.';
  });
}

// An unsigned integer field in [lo, hi].
Result<uint64_t> unsigned_field(const json& j, const char* key, uint64_t lo, uint64_t hi) {
  auto it = j.find(key);
  if (it == j.end()) return fail("{}: missing", key);
  if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0))
    return fail("{}: expected an integer in [{}, {}]", key, lo, hi);
  uint64_t v = it->get<uint64_t>();
  if (v < lo || v > hi) return fail("{}: {} is out of range [{}, {}]", key, v, lo, hi);
  return v;
}

}  // namespace

std::string RdmaEndpoint::gid_text() const {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, gid.data(), buf, sizeof buf);
  return buf;
}

json rdma_endpoint_json(const RdmaEndpoint& e) {
  return json{{"device", e.device},
              {"port", e.port},
              {"link_layer", e.ethernet ? "ethernet" : "infiniband"},
              {"gid", e.gid_text()},
              {"gid_index", e.gid_index},
              {"lid", e.lid},
              {"qpn", e.qpn},
              {"qkey", e.qkey}};
}

Result<RdmaEndpoint> parse_rdma_endpoint(const json& j) {
  if (!j.is_object()) return fail("expected an object {{device, port, gid, gid_index, lid, qpn, qkey}}");
  for (const auto& [k, v] : j.items()) {
    static constexpr const char* kKeys[] = {"device",    "port", "link_layer", "gid",
                                            "gid_index", "lid",  "qpn",        "qkey"};
    if (std::none_of(std::begin(kKeys), std::end(kKeys), [&](const char* a) { return k == a; }))
      return fail("unknown key '{}' (allowed: device, port, link_layer, gid, gid_index, lid, qpn, qkey)",
                  k.substr(0, 64));
  }
  RdmaEndpoint e;
  auto dev = j.find("device");
  if (dev == j.end() || !dev->is_string() || !valid_device_name(dev->get<std::string>()))
    return fail("device: required, a device name of 1 to 64 letters, digits, '_', '-' or '.'");
  e.device = dev->get<std::string>();
  if (auto ll = j.find("link_layer"); ll != j.end()) {
    if (!ll->is_string() || (*ll != "ethernet" && *ll != "infiniband"))
      return fail("link_layer: 'ethernet' (RoCE) or 'infiniband'");
    e.ethernet = *ll == "ethernet";
  }
  auto port = unsigned_field(j, "port", 1, 255);
  if (!port) return std::unexpected(port.error());
  e.port = static_cast<uint8_t>(*port);
  auto gid = j.find("gid");
  if (gid == j.end() || !gid->is_string() ||
      inet_pton(AF_INET6, gid->get<std::string>().c_str(), e.gid.data()) != 1)
    return fail("gid: required, an IPv6 address text (e.g. ::ffff:10.0.0.1)");
  auto gid_index = unsigned_field(j, "gid_index", 0, 65535);
  if (!gid_index) return std::unexpected(gid_index.error());
  e.gid_index = static_cast<uint16_t>(*gid_index);
  auto lid = unsigned_field(j, "lid", 0, 65535);
  if (!lid) return std::unexpected(lid.error());
  e.lid = static_cast<uint16_t>(*lid);
  auto qpn = unsigned_field(j, "qpn", 2, kMaxQpn);
  if (!qpn) return std::unexpected(qpn.error());
  e.qpn = static_cast<uint32_t>(*qpn);
  auto qkey = unsigned_field(j, "qkey", 0, UINT32_MAX);
  if (!qkey) return std::unexpected(qkey.error());
  e.qkey = static_cast<uint32_t>(*qkey);
  // What a prober needs to reach it: a GID on RoCE, a LID on InfiniBand.
  if (e.ethernet && std::all_of(e.gid.begin(), e.gid.end(), [](uint8_t b) { return b == 0; }))
    return fail("gid: a RoCE endpoint needs a non-zero GID");
  if (!e.ethernet && e.lid == 0) return fail("lid: an InfiniBand endpoint needs a LID (1..65535)");
  return e;
}

RdmaEndpoint endpoint_of(const probe::RdmaAddress& a) {
  RdmaEndpoint e;
  e.device = a.device;
  e.port = a.port;
  e.ethernet = a.ethernet;
  std::memcpy(e.gid.data(), a.gid.raw, 16);
  e.gid_index = static_cast<uint16_t>(std::max(a.gid_index, 0));
  e.lid = a.lid;
  e.qpn = a.qpn;
  e.qkey = a.qkey;
  return e;
}

probe::RdmaTarget rdma_target_of(const RdmaEndpoint& e, std::string name) {
  probe::RdmaTarget t;
  t.name = std::move(name);
  t.global = e.ethernet;
  std::memcpy(t.gid.raw, e.gid.data(), 16);
  t.lid = e.lid;
  t.qpn = e.qpn;
  t.qkey = e.qkey;
  return t;
}

}  // namespace weft::agent
