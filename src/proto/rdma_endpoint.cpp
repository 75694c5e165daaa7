#include "proto/rdma_endpoint.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "proto/json_fields.hpp"
#include "proto/names.hpp"

namespace weft::proto {
namespace {

using nlohmann::json;

constexpr uint32_t kMaxQpn = 0xFFFFFF;  // QPNs are 24 bits; 0 and 1 are the special QPs

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
  if (auto st = only_keys(j, {"device", "port", "link_layer", "gid", "gid_index", "lid", "qpn", "qkey"}); !st)
    return unexpected(st.error());
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
  if (!port) return unexpected(port.error());
  e.port = static_cast<uint8_t>(*port);
  auto gid = j.find("gid");
  if (gid == j.end() || !gid->is_string() ||
      inet_pton(AF_INET6, gid->get<std::string>().c_str(), e.gid.data()) != 1)
    return fail("gid: required, an IPv6 address text (e.g. ::ffff:10.0.0.1)");
  auto gid_index = unsigned_field(j, "gid_index", 0, 65535);
  if (!gid_index) return unexpected(gid_index.error());
  e.gid_index = static_cast<uint16_t>(*gid_index);
  auto lid = unsigned_field(j, "lid", 0, 65535);
  if (!lid) return unexpected(lid.error());
  e.lid = static_cast<uint16_t>(*lid);
  auto qpn = unsigned_field(j, "qpn", 2, kMaxQpn);
  if (!qpn) return unexpected(qpn.error());
  e.qpn = static_cast<uint32_t>(*qpn);
  auto qkey = unsigned_field(j, "qkey", 0, UINT32_MAX);
  if (!qkey) return unexpected(qkey.error());
  e.qkey = static_cast<uint32_t>(*qkey);
  // What a prober needs to reach it: a GID on RoCE, a LID on InfiniBand.
  if (e.ethernet && std::all_of(e.gid.begin(), e.gid.end(), [](uint8_t b) { return b == 0; }))
    return fail("gid: a RoCE endpoint needs a non-zero GID");
  if (!e.ethernet && e.lid == 0) return fail("lid: an InfiniBand endpoint needs a LID (1..65535)");
  return e;
}

}  // namespace weft::proto
