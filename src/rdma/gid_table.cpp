#include "rdma/gid_table.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "rdma/error.hpp"

namespace weft::rdma {

namespace {
constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

std::string ipv4_string(in_addr a) {
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}
}  // namespace

std::string gid_to_string(const ibv_gid& gid) {
  std::string out;
  out.reserve(39);
  for (int i = 0; i < 16; i += 2) {
    if (i) out += ':';
    out += fmt::format("{:02x}{:02x}", gid.raw[i], gid.raw[i + 1]);
  }
  return out;
}

Result<ibv_gid> gid_from_string(std::string_view text) {
  // Accepts the sysfs form and any IPv6 text form (inet_pton), so "::ffff:10.9.0.1" works too.
  ibv_gid gid{};
  std::string s(text);
  if (inet_pton(AF_INET6, s.c_str(), gid.raw) != 1) return fail("bad GID '{}'", text);
  return gid;
}

ibv_gid gid_from_ipv4(in_addr addr) {
  ibv_gid gid{};
  std::memcpy(gid.raw, kMappedPrefix, sizeof kMappedPrefix);
  std::memcpy(gid.raw + 12, &addr.s_addr, 4);
  return gid;
}

std::optional<in_addr> ipv4_of_gid(const ibv_gid& gid) {
  if (std::memcmp(gid.raw, kMappedPrefix, sizeof kMappedPrefix) != 0) return std::nullopt;
  in_addr a{};
  std::memcpy(&a.s_addr, gid.raw + 12, 4);
  return a;
}

bool gid_is_zero(const ibv_gid& gid) {
  return std::all_of(std::begin(gid.raw), std::end(gid.raw), [](uint8_t b) { return b == 0; });
}

Result<GidEntry> pick_roce_v2_gid(std::span<const GidEntry> table, in_addr addr) {
  const ibv_gid want = gid_from_ipv4(addr);
  for (const auto& e : table) {
    if (e.type == GidType::roce_v2 && std::memcmp(e.gid.raw, want.raw, 16) == 0) return e;
  }
  return fail("no RoCE v2 GID for {} in a table of {} entries", ipv4_string(addr), table.size());
}

Result<GidEntry> first_roce_v2_ipv4_gid(std::span<const GidEntry> table) {
  for (const auto& e : table) {
    if (e.type == GidType::roce_v2 && ipv4_of_gid(e.gid)) return e;
  }
  return fail("no RoCE v2 GID with an IPv4 address in a table of {} entries", table.size());
}

Result<std::vector<GidEntry>> query_gid_table(ibv_context* ctx, uint8_t port, int table_len) {
  std::vector<GidEntry> out;
  for (int i = 0; i < table_len; ++i) {
    ibv_gid_entry e{};
    int rc = ibv_query_gid_ex(ctx, port, static_cast<uint32_t>(i), &e, 0);
    if (rc == ENODATA || rc == EINVAL) continue;  // an empty slot
    if (rc != 0) return verb_error(fmt::format("ibv_query_gid_ex port {} index {}", port, i), rc);
    if (gid_is_zero(e.gid)) continue;
    GidEntry g;
    g.gid = e.gid;
    g.index = e.gid_index;
    g.type = e.gid_type == IBV_GID_TYPE_ROCE_V2   ? GidType::roce_v2
             : e.gid_type == IBV_GID_TYPE_ROCE_V1 ? GidType::roce_v1
                                                  : GidType::ib;
    out.push_back(g);
  }
  return out;
}

}  // namespace weft::rdma
