#include "agent/rdma_endpoint.hpp"

#include <algorithm>
#include <cstring>

namespace weft::agent {

proto::RdmaEndpoint endpoint_of(const probe::RdmaAddress& a) {
  proto::RdmaEndpoint e;
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

probe::RdmaTarget rdma_target_of(const proto::RdmaEndpoint& e, std::string name) {
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
