#include "controller/mesh_columns.hpp"

#include <fmt/format.h>

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

// Microseconds with 0.1 us resolution (the page shows RTTs to that), null when there is no value.
void append_us(std::string& out, const proto::LatencySummary& s, int64_t proto::LatencySummary::*field) {
  if (s.count == 0) {
    out += "null";
    return;
  }
  const int64_t tenths = (s.*field + 50) / 100;
  fmt::format_to(std::back_inserter(out), "{}.{}", tenths / 10, tenths % 10);
}

template <typename F>
void column(std::string& out, const char* name, const std::vector<PairWindow>& pairs, F&& write_one) {
  if (out.back() != '{') out.push_back(',');
  fmt::format_to(std::back_inserter(out), "\"{}\":[", name);
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (i) out.push_back(',');
    write_one(pairs[i]);
  }
  out.push_back(']');
}

}  // namespace

std::string mesh_columns_json(MeshColumnsHeader h, const std::vector<PairWindow>& pairs) {
  // Hosts only seen in pairs (a removed agent's last windows) are appended, so no data is hidden.
  // The views point into `h.hosts` and `pairs`, neither of which changes until the loop is done.
  std::unordered_map<std::string_view, uint32_t> index;
  for (const auto& name : h.hosts) index.emplace(name, static_cast<uint32_t>(index.size()));
  std::vector<std::string_view> extra;
  for (const auto& p : pairs)
    for (const std::string* n : {&p.src, &p.dst})
      if (index.emplace(*n, static_cast<uint32_t>(index.size())).second) extra.push_back(*n);
  h.hosts.insert(h.hosts.end(), extra.begin(), extra.end());
  index.clear();  // now into the final list
  for (const auto& name : h.hosts) index.emplace(name, static_cast<uint32_t>(index.size()));

  std::string out;
  out.reserve(256 + h.hosts.size() * 16 + pairs.size() * 80);
  out += "{\"format\":\"columns\",\"protocol\":";
  append_string(out, h.protocol);
  out += ",\"group\":";
  if (h.group.empty())
    out += "null";
  else
    append_string(out, h.group);
  fmt::format_to(std::back_inserter(out), ",\"window_s\":{},\"now\":{:.3f},\"pairs\":{},\"hosts\":[",
                 static_cast<double>(h.window_ns) / 1e9, static_cast<double>(h.now_unix_ns) / 1e9,
                 pairs.size());
  for (size_t i = 0; i < h.hosts.size(); ++i) {
    if (i) out.push_back(',');
    append_string(out, h.hosts[i]);
  }
  out += "],\"columns\":{";
  auto u = [&](uint64_t v) { fmt::format_to(std::back_inserter(out), "{}", v); };
  column(out, "src", pairs, [&](const PairWindow& p) { u(index.at(p.src)); });
  column(out, "dst", pairs, [&](const PairWindow& p) { u(index.at(p.dst)); });
  // Seconds before `now` the window ended (the page's "age"), to 1 ms.
  column(out, "age_ms", pairs, [&](const PairWindow& p) {
    fmt::format_to(std::back_inserter(out), "{}", (h.now_unix_ns - p.window.end_unix_ns) / 1'000'000);
  });
  column(out, "sent", pairs, [&](const PairWindow& p) { u(p.window.sent); });
  column(out, "received", pairs, [&](const PairWindow& p) { u(p.window.received); });
  column(out, "lost", pairs, [&](const PairWindow& p) { u(p.window.lost); });
  column(out, "late", pairs, [&](const PairWindow& p) { u(p.window.late); });
  column(out, "duplicate", pairs, [&](const PairWindow& p) { u(p.window.duplicate); });
  using S = proto::LatencySummary;
  column(out, "p50_us", pairs,
         [&](const PairWindow& p) { append_us(out, p.window.network_rtt, &S::p50_ns); });
  column(out, "p90_us", pairs,
         [&](const PairWindow& p) { append_us(out, p.window.network_rtt, &S::p90_ns); });
  column(out, "p99_us", pairs,
         [&](const PairWindow& p) { append_us(out, p.window.network_rtt, &S::p99_ns); });
  column(out, "max_us", pairs,
         [&](const PairWindow& p) { append_us(out, p.window.network_rtt, &S::max_ns); });
  column(out, "source", pairs,
         [&](const PairWindow& p) { append_string(out, proto::to_string(p.window.timestamp_source)); });
  out += "}}";
  return out;
}

}  // namespace weft::controller
