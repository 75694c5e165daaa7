#pragma once
// A port's GID table and the choice of source GID: on RoCE v2 the GID to use for an IPv4 address
// is the IPv4-mapped one (::ffff:a.b.c.d) whose type is ROCE_V2 (on rxe over 10.9.0.1 that is
// index 1; index 0 is the link-local RoCE v1/v2 one derived from the MAC).
#include <infiniband/verbs.h>
#include <netinet/in.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace weft::rdma {

enum class GidType : uint8_t { ib, roce_v1, roce_v2 };

struct GidEntry {
  ibv_gid gid{};
  uint32_t index = 0;
  GidType type = GidType::ib;
};

// "fe80:0000:...:0001" (8 groups of 4 hex digits, as sysfs prints them).
std::string gid_to_string(const ibv_gid& gid);
Result<ibv_gid> gid_from_string(std::string_view text);
// ::ffff:a.b.c.d for an IPv4 address in network byte order.
ibv_gid gid_from_ipv4(in_addr addr);
// The IPv4 address inside an IPv4-mapped GID, if it is one.
std::optional<in_addr> ipv4_of_gid(const ibv_gid& gid);
bool gid_is_zero(const ibv_gid& gid);

// The RoCE v2 entry whose GID is the IPv4-mapped form of addr.
Result<GidEntry> pick_roce_v2_gid(std::span<const GidEntry> table, in_addr addr);
// The first RoCE v2 entry with an IPv4-mapped GID (for "any address on this port").
Result<GidEntry> first_roce_v2_ipv4_gid(std::span<const GidEntry> table);

// Reads the valid entries of one port's table (ibv_query_gid_ex for every index up to gid_tbl_len).
Result<std::vector<GidEntry>> query_gid_table(ibv_context* ctx, uint8_t port, int table_len);

}  // namespace weft::rdma
