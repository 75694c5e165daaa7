#pragma once
// The latest mesh in a compact columnar JSON form for the dashboard (GET /api/v1/mesh?format=columns).
//
// The row form costs about 610 bytes a pair (every window's three full latency summaries with their
// field names): 150 MB at 500 hosts, and the page waited on it. This form names each field once and
// gives one array per field, pairs in the same order in every array, hosts by their index in `hosts`,
// and only what the heatmap and its tooltip show: about 70 bytes a pair. Written straight into one
// string (no JSON tree: at a million pairs a tree would cost more than the numbers).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "controller/mesh_state.hpp"

namespace weft::controller {

struct MeshColumnsHeader {
  std::string_view protocol;
  std::string_view group;  // "" = all hosts (written as null)
  int64_t window_ns = 0;
  int64_t now_unix_ns = 0;
  std::vector<std::string> hosts;  // listed first; hosts that only appear in pairs are appended
};

// `cells` already filtered to what the request asked for (Mesh::latest_cells).
std::string mesh_columns_json(MeshColumnsHeader header, const MeshCells& cells);
// The same from full windows (tests, callers that have them).
std::string mesh_columns_json(MeshColumnsHeader header, const std::vector<PairWindow>& pairs);

}  // namespace weft::controller
