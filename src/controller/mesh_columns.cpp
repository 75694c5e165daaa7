#include "controller/mesh_columns.hpp"

#include <fmt/format.h>

#include <charconv>
#include <climits>
#include <cstdint>
#include <unordered_map>

namespace weft::controller {
namespace {

// JSON string with the few characters host names cannot hold escaped anyway (names are checked at
// the door, valid_host_name; this keeps the output valid JSON whatever comes in).
void append_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}",
                     static_cast<unsigned>(static_cast<unsigned char>(c)));
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

void append_u(std::string& out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_i(std::string& out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// Microseconds with 0.1 us resolution (the page shows RTTs to that), null when there is no value.
void append_us(std::string& out, uint64_t count, int64_t ns) {
  if (count == 0) {
    out += "null";
    return;
  }
  int64_t tenths = (ns + 50) / 100;
  if (tenths < 0) {
    out.push_back('-');
    tenths = -tenths;
  }
  append_i(out, tenths / 10);
  out.push_back('.');
  append_i(out, tenths % 10);
}

template <typename F>
void column(std::string& out, const char* name, const std::vector<PairCells>& pairs, F&& write_one) {
  if (out.back() != '{') out.push_back(',');
  out.push_back('"');
  out += name;
  out += "\":[";
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (i) out.push_back(',');
    write_one(pairs[i]);
  }
  out.push_back(']');
}

}  // namespace

std::string mesh_columns_json(MeshColumnsHeader h, const MeshCells& cells) {
  // Each name id's place in the host list, looked up once per name (not per pair). Hosts only seen
  // in pairs (a removed agent's last windows) are appended, so no data is hidden.
  std::unordered_map<std::string_view, uint32_t> listed;
  for (const auto& name : h.hosts) listed.emplace(name, static_cast<uint32_t>(listed.size()));
  constexpr uint32_t kUnplaced = UINT32_MAX;
  std::vector<uint32_t> place(cells.names.size(), kUnplaced);
  for (uint32_t id = 0; id < cells.names.size(); ++id)
    if (auto it = listed.find(cells.names[id]); it != listed.end()) place[id] = it->second;
  for (const auto& p : cells.pairs)
    for (uint32_t id : {p.src, p.dst})
      if (place[id] == kUnplaced) {
        place[id] = static_cast<uint32_t>(h.hosts.size());
        h.hosts.push_back(cells.names[id]);
      }

  std::string out;
  out.reserve(256 + h.hosts.size() * 16 + cells.pairs.size() * 80);
  out += "{\"format\":\"columns\",\"protocol\":";
  append_string(out, h.protocol);
  out += ",\"group\":";
  if (h.group.empty())
    out += "null";
  else
    append_string(out, h.group);
  fmt::format_to(std::back_inserter(out), ",\"window_s\":{},\"now\":{:.3f},\"pairs\":{},\"hosts\":[",
                 static_cast<double>(h.window_ns) / 1e9, static_cast<double>(h.now_unix_ns) / 1e9,
                 cells.pairs.size());
  for (size_t i = 0; i < h.hosts.size(); ++i) {
    if (i) out.push_back(',');
    append_string(out, h.hosts[i]);
  }
  out += "],\"columns\":{";
  const auto& pairs = cells.pairs;
  column(out, "src", pairs, [&](const PairCells& p) { append_u(out, place[p.src]); });
  column(out, "dst", pairs, [&](const PairCells& p) { append_u(out, place[p.dst]); });
  // Seconds before `now` the window ended (the page's "age"), to 1 ms.
  column(out, "age_ms", pairs,
         [&](const PairCells& p) { append_i(out, (h.now_unix_ns - p.end_unix_ns) / 1'000'000); });
  column(out, "sent", pairs, [&](const PairCells& p) { append_u(out, p.sent); });
  column(out, "received", pairs, [&](const PairCells& p) { append_u(out, p.received); });
  column(out, "lost", pairs, [&](const PairCells& p) { append_u(out, p.lost); });
  column(out, "late", pairs, [&](const PairCells& p) { append_u(out, p.late); });
  column(out, "duplicate", pairs, [&](const PairCells& p) { append_u(out, p.duplicate); });
  column(out, "p50_us", pairs, [&](const PairCells& p) { append_us(out, p.rtt_count, p.p50_ns); });
  column(out, "p90_us", pairs, [&](const PairCells& p) { append_us(out, p.rtt_count, p.p90_ns); });
  column(out, "p99_us", pairs, [&](const PairCells& p) { append_us(out, p.rtt_count, p.p99_ns); });
  column(out, "max_us", pairs, [&](const PairCells& p) { append_us(out, p.rtt_count, p.max_ns); });
  column(out, "source", pairs, [&](const PairCells& p) { append_string(out, proto::to_string(p.source)); });
  out += "}}";
  return out;
}

std::string mesh_columns_json(MeshColumnsHeader h, const std::vector<PairWindow>& pairs) {
  MeshCells cells;
  std::unordered_map<std::string_view, uint32_t> ids;
  auto id_of = [&](const std::string& name) {
    auto [it, fresh] = ids.emplace(name, static_cast<uint32_t>(cells.names.size()));
    if (fresh) cells.names.push_back(name);
    return it->second;
  };
  cells.pairs.reserve(pairs.size());
  for (const auto& p : pairs) {
    const proto::WindowStats& w = p.window;
    const proto::LatencySummary& r = w.network_rtt;
    const uint32_t src = id_of(p.src), dst = id_of(p.dst);
    cells.pairs.push_back(PairCells{src, dst, w.timestamp_source, w.end_unix_ns, w.sent, w.received, w.lost,
                                    w.late, w.duplicate, r.count, r.p50_ns, r.p90_ns, r.p99_ns, r.max_ns});
  }
  return mesh_columns_json(std::move(h), cells);
}

}  // namespace weft::controller
