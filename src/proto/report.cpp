#include "proto/report.hpp"

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <span>
#include <unordered_map>

#include "proto/window_counters.hpp"

namespace weft::proto {
namespace {

constexpr char kMagic[4] = {'W', 'F', 'T', '1'};

// Deltas wrap instead of overflowing: garbage in a report must not be undefined behaviour.
int64_t wsub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wadd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

// ---- writer -------------------------------------------------------------------------------------
void put_varint(std::string& out, uint64_t v) {
  char buf[10];
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out.append(buf, n);
}
void put_signed(std::string& out, int64_t v) {
  put_varint(out, (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}
void put_string(std::string& out, std::string_view s) {
  put_varint(out, s.size());
  out.append(s);
}
// Doubles as fixed-point thousandths: health figures need no more precision.
void put_milli(std::string& out, double v) {
  double m = v * 1000.0;
  put_varint(out, m > 0 && m < 1e18 ? static_cast<uint64_t>(std::llround(m)) : 0);
}

void put_summary(std::string& out, const LatencySummary& s) {
  put_varint(out, s.count);
  if (s.count == 0) return;
  // min first, the others as deltas from the one before: small numbers, short varints.
  put_signed(out, s.min_ns);
  put_signed(out, wsub(s.mean_ns, s.min_ns));
  put_signed(out, wsub(s.p50_ns, s.min_ns));
  put_signed(out, wsub(s.p90_ns, s.p50_ns));
  put_signed(out, wsub(s.p95_ns, s.p90_ns));
  put_signed(out, wsub(s.p99_ns, s.p95_ns));
  put_signed(out, wsub(s.p999_ns, s.p99_ns));
  put_signed(out, wsub(s.max_ns, s.p999_ns));
}

// ---- reader -------------------------------------------------------------------------------------
// A varint with no bounds check, for callers that know 10 bytes (the longest varint) are there.
// Sets `overlong` (and returns 0) for one longer than that.
[[gnu::always_inline]] inline uint64_t varint_unchecked(const unsigned char*& p, bool& overlong) {
  uint64_t b = *p++;
  if (b < 0x80) return b;
  uint64_t v = b & 0x7f;
  for (int shift = 7; shift < 64; shift += 7) {
    b = *p++;
    v |= (b & 0x7f) << shift;
    if (b < 0x80) return v;
  }
  overlong = true;
  return 0;
}

[[gnu::always_inline]] inline int64_t unzigzag(uint64_t z) {
  return static_cast<int64_t>((z >> 1) ^ (~(z & 1) + 1));
}

struct Reader {
  const unsigned char* p;
  const unsigned char* end;
  const char* error = nullptr;

  bool ok() const { return error == nullptr; }
  void bad(const char* why) {
    if (!error) error = why;
    p = end;
  }
  // Hot: a report of 300 windows is ~12,000 varints. When at least 10 bytes (the longest varint)
  // are left, no byte needs its own bounds check.
  [[gnu::always_inline]] uint64_t varint() {
    if (end - p >= 10) [[likely]] {
      bool overlong = false;
      const uint64_t v = varint_unchecked(p, overlong);
      if (overlong) bad("varint longer than 10 bytes");
      return v;
    }
    return varint_checked();
  }
  [[gnu::noinline]] uint64_t varint_checked() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) {
        bad("truncated varint");
        return 0;
      }
      uint8_t b = *p++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    bad("varint longer than 10 bytes");
    return 0;
  }
  [[gnu::always_inline]] int64_t signed_() { return unzigzag(varint()); }
  uint8_t byte() {
    if (p >= end) {
      bad("truncated");
      return 0;
    }
    return *p++;
  }
  std::string_view string(size_t max) {
    uint64_t n = varint();
    if (!ok()) return {};
    if (n > max) {
      bad("string too long");
      return {};
    }
    if (static_cast<uint64_t>(end - p) < n) {
      bad("truncated string");
      return {};
    }
    std::string_view s(reinterpret_cast<const char*>(p), n);
    p += n;
    return s;
  }
  double milli() { return static_cast<double>(varint()) / 1000.0; }
};

// Reads a whole window with no bounds check at all, for when read_window_list has made sure that
// even the longest possible window fits in what is left (every varint still stops at 10 bytes).
// It keeps its cursor in a local, so the compiler holds it in a register across a window's ~40
// varints instead of storing it back after each one.
struct UncheckedReader {
  const unsigned char* p;
  bool overlong = false;

  bool ok() const { return !overlong; }
  [[gnu::always_inline]] uint64_t varint() { return varint_unchecked(p, overlong); }
  [[gnu::always_inline]] int64_t signed_() { return unzigzag(varint()); }
  uint8_t byte() { return *p++; }
};

// Two name indices, protocol and timestamp-source bytes, start, end and seven counters, and three
// summaries of nine values: the most bytes one window can take, every varint at 10 bytes.
constexpr size_t kMaxWindowBytes = 2 * 10 + 2 + 9 * 10 + 3 * 9 * 10;

template <typename R>
[[gnu::always_inline]] inline LatencySummary get_summary(R& r) {
  LatencySummary s;
  s.count = r.varint();
  if (s.count == 0) return s;
  s.min_ns = r.signed_();
  s.mean_ns = wadd(s.min_ns, r.signed_());
  s.p50_ns = wadd(s.min_ns, r.signed_());
  s.p90_ns = wadd(s.p50_ns, r.signed_());
  s.p95_ns = wadd(s.p90_ns, r.signed_());
  s.p99_ns = wadd(s.p95_ns, r.signed_());
  s.p999_ns = wadd(s.p99_ns, r.signed_());
  s.max_ns = wadd(s.p999_ns, r.signed_());
  return s;
}

// One window (after the name table); `i` is only for error messages.
template <typename R>
[[gnu::always_inline]] inline Status read_window(R& r, std::span<const std::string_view> names, uint64_t i,
                                                 WindowStats& w) {
  uint64_t ti = r.varint(), ai = r.varint();
  if (!r.ok()) return {};  // the caller reports the reader's error
  if (ti >= names.size() || ai >= names.size()) return fail("window {}: name index out of range", i);
  w.target = names[ti];
  w.target_address = names[ai];
  uint8_t proto = r.byte(), ts = r.byte();
  if (proto > static_cast<uint8_t>(Protocol::rdma)) return fail("window {}: unknown protocol {}", i, proto);
  if (ts > static_cast<uint8_t>(TimestampSource::user))
    return fail("window {}: unknown timestamp source {}", i, ts);
  w.protocol = static_cast<Protocol>(proto);
  w.timestamp_source = static_cast<TimestampSource>(ts);
  w.start_unix_ns = r.signed_();
  w.end_unix_ns = wadd(w.start_unix_ns, r.signed_());
  w.sent = r.varint();
  w.received = r.varint();
  w.lost = r.varint();
  w.late = r.varint();
  w.duplicate = r.varint();
  w.malformed = r.varint();
  w.weird = r.varint();
  w.rtt_incl_responder_delay = get_summary(r);
  w.network_rtt = get_summary(r);
  w.responder_delay = get_summary(r);
  return {};
}

Status read_window_list(Reader& r, std::vector<WindowStats>& out, size_t max_windows = kMaxWindowsPerReport) {
  uint64_t n_names = r.varint();
  if (!r.ok()) return fail("window list: {}", r.error);
  // Each name needs at least one byte: a count larger than the rest of the body is a lie.
  if (n_names > static_cast<uint64_t>(r.end - r.p))
    return fail("window list: name count {} exceeds body", n_names);
  std::vector<std::string_view> names;
  names.reserve(n_names);
  for (uint64_t i = 0; i < n_names && r.ok(); ++i) names.push_back(r.string(kMaxNameLength));
  uint64_t n = r.varint();
  if (!r.ok()) return fail("window list: {}", r.error);
  if (n > std::min(max_windows, kMaxWindowsPerReport))
    return fail("window list: {} windows, at most {} allowed", n,
                std::min(max_windows, kMaxWindowsPerReport));
  if (n > static_cast<uint64_t>(r.end - r.p)) return fail("window list: window count {} exceeds body", n);
  out.reserve(out.size() + n);
  for (uint64_t i = 0; i < n && r.ok(); ++i) {
    // Decoded in place (no temporary to move); on an error the caller drops the whole list.
    WindowStats& w = out.emplace_back();
    if (static_cast<size_t>(r.end - r.p) >= kMaxWindowBytes) {
      UncheckedReader u{r.p};
      auto st = read_window(u, names, i, w);
      r.p = u.p;
      if (u.overlong) r.bad("varint longer than 10 bytes");
      if (!st) return st;
    } else if (auto st = read_window(r, names, i, w); !st) {
      return st;
    }
  }
  if (!r.ok()) return fail("window list: {}", r.error);
  return {};
}

// ---- the optional sections after the window list ------------------------------------------------
constexpr uint8_t kFlowsSection = 1;
constexpr uint8_t kPathsSection = 2;

void append_flows_section(std::string& out, std::span<const WindowStats> windows) {
  uint64_t with_flows = 0;
  for (const auto& w : windows) with_flows += w.flows.empty() ? 0 : 1;
  if (with_flows == 0) return;
  out.push_back(static_cast<char>(kFlowsSection));
  put_varint(out, with_flows);
  for (size_t i = 0; i < windows.size(); ++i) {
    const auto& flows = windows[i].flows;
    if (flows.empty()) continue;
    put_varint(out, i);
    put_varint(out, flows.size());
    for (const auto& f : flows) {
      put_varint(out, f.src_port);
      put_varint(out, f.sent);
      put_varint(out, f.received);
      put_varint(out, f.lost);
      put_signed(out, f.network_rtt_p50_ns);
    }
  }
}

Status read_flows_section(Reader& r, std::vector<WindowStats>& windows) {
  const uint64_t n = r.varint();
  if (!r.ok()) return fail("flows section: {}", r.error);
  if (n > windows.size()) return fail("flows section: {} entries for {} windows", n, windows.size());
  uint64_t next_index = 0;
  for (uint64_t e = 0; e < n; ++e) {
    const uint64_t wi = r.varint(), nf = r.varint();
    if (!r.ok()) return fail("flows section: {}", r.error);
    if (wi < next_index || wi >= windows.size())
      return fail("flows section: entry {}: window index {} out of order or range", e, wi);
    if (nf == 0 || nf > kMaxFlowsPerWindow)
      return fail("flows section: window {}: {} flows, 1..{} allowed", wi, nf, kMaxFlowsPerWindow);
    next_index = wi + 1;
    auto& flows = windows[wi].flows;
    flows.resize(nf);
    for (auto& f : flows) {
      const uint64_t port = r.varint();
      f.sent = r.varint();
      f.received = r.varint();
      f.lost = r.varint();
      f.network_rtt_p50_ns = r.signed_();
      if (!r.ok()) return fail("flows section: window {}: {}", wi, r.error);
      if (port > 65535) return fail("flows section: window {}: source port {} out of range", wi, port);
      f.src_port = static_cast<uint16_t>(port);
    }
  }
  return {};
}

void append_paths_section(std::string& out, std::span<const PathTrace> paths) {
  if (paths.empty()) return;
  out.push_back(static_cast<char>(kPathsSection));
  put_varint(out, paths.size());
  for (const auto& p : paths) {
    out.push_back(static_cast<char>(p.protocol));
    put_string(out, p.target);
    put_varint(out, p.src_port);
    put_varint(out, p.dst_port);
    put_signed(out, p.traced_at_unix_ns);
    out.push_back(p.reached ? 1 : 0);
    put_varint(out, p.hops.size());
    for (const auto& h : p.hops) put_string(out, h);
  }
}

Status read_paths_section(Reader& r, std::vector<PathTrace>& paths, size_t max_paths) {
  const uint64_t n = r.varint();
  if (!r.ok()) return fail("paths section: {}", r.error);
  max_paths = std::min(max_paths, kMaxPathsPerReport);
  if (n > max_paths || n > static_cast<uint64_t>(r.end - r.p))
    return fail("paths section: path count {} exceeds the body or {}", n, max_paths);
  paths.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    PathTrace& p = paths[i];
    const uint8_t proto = r.byte();
    p.target = r.string(kMaxNameLength);
    const uint64_t sport = r.varint(), dport = r.varint();
    p.traced_at_unix_ns = r.signed_();
    const uint8_t reached = r.byte();
    const uint64_t nh = r.varint();
    if (!r.ok()) return fail("paths section: path {}: {}", i, r.error);
    if (proto > static_cast<uint8_t>(Protocol::rdma))
      return fail("paths section: path {}: unknown protocol {}", i, proto);
    if (sport > 65535 || dport > 65535) return fail("paths section: path {}: port out of range", i);
    if (reached > 1) return fail("paths section: path {}: reached must be 0 or 1, not {}", i, reached);
    if (nh > kMaxHops) return fail("paths section: path {}: {} hops, at most {}", i, nh, kMaxHops);
    p.protocol = static_cast<Protocol>(proto);
    p.src_port = static_cast<uint16_t>(sport);
    p.dst_port = static_cast<uint16_t>(dport);
    p.reached = reached == 1;
    p.hops.resize(nh);
    for (auto& h : p.hops) h = r.string(kMaxHopLength);
    if (!r.ok()) return fail("paths section: path {}: hops: {}", i, r.error);
  }
  return {};
}

// The sections after the window list: known tags in increasing order, each at most once.
Status read_sections(Reader& r, Report& rep, size_t max_paths) {
  uint8_t last = 0;
  while (r.p != r.end) {
    const uint8_t tag = *r.p++;
    if (tag <= last)
      return fail("binary report: section {} after section {} (out of order or repeated)", tag, last);
    last = tag;
    Status st;
    switch (tag) {
      case kFlowsSection:
        st = read_flows_section(r, rep.windows);
        break;
      case kPathsSection:
        st = read_paths_section(r, rep.paths, max_paths);
        break;
      default:
        return fail("binary report: unknown section {}", tag);
    }
    if (!st) return st;
  }
  return {};
}

// ---- JSON helpers -------------------------------------------------------------------------------
using nlohmann::json;

json summary_json(const LatencySummary& s) {
  return json{{"count", s.count},   {"min_ns", s.min_ns},   {"mean_ns", s.mean_ns},
              {"p50_ns", s.p50_ns}, {"p90_ns", s.p90_ns},   {"p95_ns", s.p95_ns},
              {"p99_ns", s.p99_ns}, {"p999_ns", s.p999_ns}, {"max_ns", s.max_ns}};
}

// Reads obj[key] with strict typing; absent -> default unless required.
struct JsonReader {
  std::string error;

  const json* field(const json& obj, const char* key, const std::string& where, bool required) {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required && error.empty()) error = fmt::format("{}: missing field '{}'", where, key);
      return nullptr;
    }
    return &*it;
  }
  uint64_t u64(const json& obj, const char* key, const std::string& where, bool required = false) {
    const json* v = field(obj, key, where, required);
    if (!v) return 0;
    if (!v->is_number_unsigned()) {
      // JSON has one number type: accept a non-negative integer however the parser typed it.
      if (v->is_number_integer() && v->get<int64_t>() >= 0) return v->get<uint64_t>();
      if (error.empty()) error = fmt::format("{}.{}: expected a non-negative integer", where, key);
      return 0;
    }
    return v->get<uint64_t>();
  }
  int64_t i64(const json& obj, const char* key, const std::string& where, bool required = false) {
    const json* v = field(obj, key, where, required);
    if (!v) return 0;
    if (!v->is_number_integer()) {
      if (error.empty()) error = fmt::format("{}.{}: expected an integer", where, key);
      return 0;
    }
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      if (error.empty()) error = fmt::format("{}.{}: out of range", where, key);
      return 0;
    }
    return v->get<int64_t>();
  }
  double num(const json& obj, const char* key, const std::string& where) {
    const json* v = field(obj, key, where, false);
    if (!v) return 0;
    if (!v->is_number()) {
      if (error.empty()) error = fmt::format("{}.{}: expected a number", where, key);
      return 0;
    }
    return v->get<double>();
  }
  std::string str(const json& obj, const char* key, const std::string& where, size_t max, bool required) {
    const json* v = field(obj, key, where, required);
    if (!v) return {};
    if (!v->is_string()) {
      if (error.empty()) error = fmt::format("{}.{}: expected a string", where, key);
      return {};
    }
    const auto& s = v->get_ref<const std::string&>();
    if (s.size() > max) {
      if (error.empty()) error = fmt::format("{}.{}: longer than {} bytes", where, key, max);
      return {};
    }
    return s;
  }
  LatencySummary summary(const json& obj, const char* key, const std::string& where) {
    LatencySummary s;
    const json* v = field(obj, key, where, false);
    if (!v) return s;
    if (!v->is_object()) {
      if (error.empty()) error = fmt::format("{}.{}: expected an object", where, key);
      return s;
    }
    std::string w = where + "." + key;
    s.count = u64(*v, "count", w);
    s.min_ns = i64(*v, "min_ns", w);
    s.mean_ns = i64(*v, "mean_ns", w);
    s.p50_ns = i64(*v, "p50_ns", w);
    s.p90_ns = i64(*v, "p90_ns", w);
    s.p95_ns = i64(*v, "p95_ns", w);
    s.p99_ns = i64(*v, "p99_ns", w);
    s.p999_ns = i64(*v, "p999_ns", w);
    s.max_ns = i64(*v, "max_ns", w);
    return s;
  }
};

json window_to_json(const WindowStats& w) {
  json j{{"protocol", to_string(w.protocol)},
         {"target", w.target},
         {"target_address", w.target_address},
         {"start_unix_ns", w.start_unix_ns},
         {"end_unix_ns", w.end_unix_ns},
         {kRttInclResponderDelayField, summary_json(w.rtt_incl_responder_delay)},
         {kNetworkRttField, summary_json(w.network_rtt)},
         {kResponderDelayField, summary_json(w.responder_delay)}};
  // A released (0.1) controller reads only "rtt", and the Redis store's values may be read by one
  // during an upgrade: the old name stays beside the new one.
  j[kLegacyRttField] = j[kRttInclResponderDelayField];
  put_window_counters(j, w);
  return j;
}

// A window's per-flow counters: only in a report (encode_json), not in window_json (the Redis
// store's values and the read API keep the pair aggregate alone).
void put_flows(json& j, const WindowStats& w) {
  if (w.flows.empty()) return;
  json flows = json::array();
  for (const auto& f : w.flows)
    flows.push_back({{"src_port", f.src_port},
                     {"sent", f.sent},
                     {"received", f.received},
                     {"lost", f.lost},
                     {"network_rtt_p50_ns", f.network_rtt_p50_ns}});
  j["flows"] = std::move(flows);
}

json path_to_json(const PathTrace& p) {
  return json{{"protocol", to_string(p.protocol)},
              {"target", p.target},
              {"src_port", p.src_port},
              {"dst_port", p.dst_port},
              {"traced_at_unix_ns", p.traced_at_unix_ns},
              {"reached", p.reached},
              {"hops", p.hops}};
}

// A port: an integer 0..65535 (0 only where `zero_ok`).
uint16_t port_field(JsonReader& jr, const json& o, const char* key, const std::string& where, bool zero_ok) {
  const uint64_t v = jr.u64(o, key, where, true);
  if (jr.error.empty() && (v > 65535 || (v == 0 && !zero_ok)))
    jr.error = fmt::format("{}.{}: {} is not a port", where, key, v);
  return static_cast<uint16_t>(v);
}

Status flows_from_json(const json& o, const std::string& where, JsonReader& jr, WindowStats& w) {
  auto it = o.find("flows");
  if (it == o.end()) return {};
  if (!it->is_array()) return fail("{}.flows: expected an array", where);
  if (it->empty() || it->size() > kMaxFlowsPerWindow)
    return fail("{}.flows: {} flows, 1..{} allowed", where, it->size(), kMaxFlowsPerWindow);
  w.flows.resize(it->size());
  for (size_t i = 0; i < it->size() && jr.error.empty(); ++i) {
    const json& f = (*it)[i];
    const std::string fw = fmt::format("{}.flows[{}]", where, i);
    if (!f.is_object()) return fail("{}: expected an object", fw);
    FlowStats& out = w.flows[i];
    out.src_port = port_field(jr, f, "src_port", fw, true);
    out.sent = jr.u64(f, "sent", fw, true);
    out.received = jr.u64(f, "received", fw, true);
    out.lost = jr.u64(f, "lost", fw, true);
    out.network_rtt_p50_ns = jr.i64(f, "network_rtt_p50_ns", fw, false);
  }
  return {};
}

Status path_from_json(const json& o, const std::string& where, JsonReader& jr, PathTrace& p) {
  if (!o.is_object()) return fail("{}: expected an object", where);
  auto proto = parse_protocol(jr.str(o, "protocol", where, 16, true));
  if (!jr.error.empty()) return {};
  if (!proto) return fail("{}.protocol: {}", where, proto.error().message);
  p.protocol = *proto;
  p.target = jr.str(o, "target", where, kMaxNameLength, true);
  p.src_port = port_field(jr, o, "src_port", where, true);
  p.dst_port = port_field(jr, o, "dst_port", where, true);
  p.traced_at_unix_ns = jr.i64(o, "traced_at_unix_ns", where, true);
  if (auto it = o.find("reached"); it != o.end()) {
    if (!it->is_boolean()) return fail("{}.reached: expected true or false", where);
    p.reached = it->get<bool>();
  }
  auto it = o.find("hops");
  if (it == o.end() || !it->is_array()) return fail("{}.hops: expected an array", where);
  if (it->size() > kMaxHops) return fail("{}.hops: {} hops, at most {}", where, it->size(), kMaxHops);
  for (size_t i = 0; i < it->size(); ++i) {
    const json& h = (*it)[i];
    if (!h.is_string()) return fail("{}.hops[{}]: expected a string (\"\" for no answer)", where, i);
    const auto& hs = h.get_ref<const std::string&>();
    if (hs.size() > kMaxHopLength) return fail("{}.hops[{}]: longer than {} bytes", where, i, kMaxHopLength);
    p.hops.push_back(hs);
  }
  return {};
}

// Reads one window object; errors go to jr.error (or the returned status for enum values).
Status window_from_json(const json& o, const std::string& where, JsonReader& jr, WindowStats& w) {
  if (!o.is_object()) return fail("{}: expected an object", where);
  auto proto = parse_protocol(jr.str(o, "protocol", where, 16, true));
  if (!jr.error.empty()) return {};
  if (!proto) return fail("{}.protocol: {}", where, proto.error().message);
  w.protocol = *proto;
  w.target = jr.str(o, "target", where, kMaxNameLength, true);
  w.target_address = jr.str(o, "target_address", where, kMaxNameLength, false);
  w.start_unix_ns = jr.i64(o, "start_unix_ns", where, true);
  w.end_unix_ns = jr.i64(o, "end_unix_ns", where, true);
  for (const auto& c : kWindowCounters) w.*c.member = jr.u64(o, c.name, where, c.required);
  if (o.contains("timestamp_source")) {
    auto ts = parse_timestamp_source(jr.str(o, "timestamp_source", where, 16, true));
    if (!jr.error.empty()) return {};
    if (!ts) return fail("{}.timestamp_source: {}", where, ts.error().message);
    w.timestamp_source = *ts;
  }
  // rtt_incl_responder_delay, or what a 0.1 agent or store value calls it (rtt); both must agree.
  if (o.contains(kRttInclResponderDelayField)) {
    w.rtt_incl_responder_delay = jr.summary(o, kRttInclResponderDelayField, where);
    if (o.contains(kLegacyRttField) && jr.summary(o, kLegacyRttField, where) != w.rtt_incl_responder_delay &&
        jr.error.empty())
      jr.error = fmt::format("{}.{}: disagrees with {}", where, kLegacyRttField, kRttInclResponderDelayField);
  } else {
    w.rtt_incl_responder_delay = jr.summary(o, kLegacyRttField, where);
  }
  w.network_rtt = jr.summary(o, kNetworkRttField, where);
  w.responder_delay = jr.summary(o, kResponderDelayField, where);
  return flows_from_json(o, where, jr, w);
}

}  // namespace

std::string window_json(const WindowStats& w) { return window_to_json(w).dump(); }

Result<WindowStats> parse_window_json(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return fail("window is not valid JSON");
  JsonReader jr;
  WindowStats w;
  if (auto st = window_from_json(j, "window", jr, w); !st) return unexpected(st.error());
  if (!jr.error.empty()) return fail("{}", jr.error);
  return w;
}

void append_window_list(std::string& out, std::span<const WindowStats> windows) {
  std::unordered_map<std::string_view, uint64_t> index;
  std::vector<std::string_view> names;
  auto id = [&](std::string_view s) {
    auto [it, inserted] = index.try_emplace(s, names.size());
    if (inserted) names.push_back(s);
    return it->second;
  };
  std::string body;
  body.reserve(windows.size() * 64);
  for (const auto& w : windows) {
    put_varint(body, id(w.target));
    put_varint(body, id(w.target_address));
    body.push_back(static_cast<char>(w.protocol));
    body.push_back(static_cast<char>(w.timestamp_source));
    put_signed(body, w.start_unix_ns);
    put_signed(body, wsub(w.end_unix_ns, w.start_unix_ns));
    for (uint64_t v : {w.sent, w.received, w.lost, w.late, w.duplicate, w.malformed, w.weird})
      put_varint(body, v);
    put_summary(body, w.rtt_incl_responder_delay);
    put_summary(body, w.network_rtt);
    put_summary(body, w.responder_delay);
  }
  put_varint(out, names.size());
  for (auto n : names) put_string(out, n);
  put_varint(out, windows.size());
  out += body;
}

Result<std::vector<WindowStats>> decode_window_list(std::string_view bytes) {
  Reader r{reinterpret_cast<const unsigned char*>(bytes.data()),
           reinterpret_cast<const unsigned char*>(bytes.data() + bytes.size())};
  std::vector<WindowStats> out;
  if (auto st = read_window_list(r, out); !st) return unexpected(st.error());
  if (r.p != r.end) return fail("window list: {} trailing bytes", r.end - r.p);
  return out;
}

std::string encode_binary(const Report& rep) {
  std::string out(kMagic, sizeof kMagic);
  put_string(out, rep.agent);
  put_varint(out, rep.seq);
  put_milli(out, rep.health.cpu_percent);
  put_varint(out, rep.health.rss_kb);
  put_milli(out, rep.health.probes_per_s);
  put_varint(out, rep.health.dropped_windows);
  put_varint(out, rep.health.spooled_windows);
  put_varint(out, rep.health.prober_restarts);
  put_varint(out, rep.alarms.size());
  for (const auto& a : rep.alarms) {
    put_string(out, a.kind);
    put_string(out, a.message);
    put_signed(out, a.unix_ns);
  }
  append_window_list(out, rep.windows);
  append_flows_section(out, rep.windows);
  append_paths_section(out, rep.paths);
  return out;
}

Result<Report> decode_binary(std::string_view bytes, size_t max_windows, size_t max_paths) {
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return fail("binary report: bad magic (expected 'WFT1')");
  Reader r{reinterpret_cast<const unsigned char*>(bytes.data() + sizeof kMagic),
           reinterpret_cast<const unsigned char*>(bytes.data() + bytes.size())};
  Report rep;
  rep.agent = r.string(kMaxNameLength);
  rep.seq = r.varint();
  rep.health.cpu_percent = r.milli();
  rep.health.rss_kb = r.varint();
  rep.health.probes_per_s = r.milli();
  rep.health.dropped_windows = r.varint();
  rep.health.spooled_windows = r.varint();
  rep.health.prober_restarts = r.varint();
  uint64_t n_alarms = r.varint();
  if (!r.ok()) return fail("binary report header: {}", r.error);
  if (n_alarms > kMaxAlarmsPerReport)
    return fail("binary report: {} alarms, at most {}", n_alarms, kMaxAlarmsPerReport);
  for (uint64_t i = 0; i < n_alarms && r.ok(); ++i) {
    AlarmEvent a;
    a.kind = r.string(kMaxNameLength);
    a.message = r.string(kMaxTextLength);
    a.unix_ns = r.signed_();
    rep.alarms.push_back(std::move(a));
  }
  if (!r.ok()) return fail("binary report alarms: {}", r.error);
  const char* list_begin = reinterpret_cast<const char*>(r.p);
  if (auto st = read_window_list(r, rep.windows, max_windows); !st) return unexpected(st.error());
  rep.encoded_windows =
      std::string_view(list_begin, static_cast<size_t>(reinterpret_cast<const char*>(r.p) - list_begin));
  if (auto st = read_sections(r, rep, max_paths); !st) return unexpected(st.error());
  return rep;
}

std::string encode_json(const Report& r) {
  json j;
  j["agent"] = r.agent;
  j["seq"] = r.seq;
  j["health"] = {
      {"cpu_percent", r.health.cpu_percent},         {"rss_kb", r.health.rss_kb},
      {"probes_per_s", r.health.probes_per_s},       {"dropped_windows", r.health.dropped_windows},
      {"spooled_windows", r.health.spooled_windows}, {"prober_restarts", r.health.prober_restarts}};
  j["alarms"] = json::array();
  for (const auto& a : r.alarms)
    j["alarms"].push_back({{"kind", a.kind}, {"message", a.message}, {"unix_ns", a.unix_ns}});
  j["windows"] = json::array();
  for (const auto& w : r.windows) {
    j["windows"].push_back(window_to_json(w));
    put_flows(j["windows"].back(), w);
  }
  if (!r.paths.empty()) {
    j["paths"] = json::array();
    for (const auto& p : r.paths) j["paths"].push_back(path_to_json(p));
  }
  return j.dump();
}

namespace {

// decode_json reads the body as a stream of parse events and turns each window (and each traced
// path) into its struct as soon as its object ends, dropping the object: they never exist as one
// JSON tree (a tree costs 10-20 times its text). Everything else is bounded by count: the report's
// other values (agent, health, alarms), each window's values (its per-flow counters included) and
// each path's, so no body can make the decoder hold more than the body, the decoded windows and
// paths and one item's tree.
constexpr size_t kMaxValuesPerWindow = 256 + kMaxFlowsPerWindow * 16;
constexpr size_t kMaxValuesPerPath = 64 + kMaxHops * 2;
constexpr size_t kMaxOtherValues = kMaxAlarmsPerReport * 8 + 256;

struct StreamDecode {
  size_t max_windows = kMaxWindowsPerReport;
  size_t max_paths = kMaxPathsPerReport;
  std::vector<WindowStats> windows;
  std::vector<PathTrace> paths;
  JsonReader jr;
  std::string error;
  std::string top;  // the root object's key being read
  size_t item_values = 0, other_values = 0;

  void bad(std::string e) {
    if (error.empty()) error = std::move(e);
  }
  bool on_event(int depth, json::parse_event_t ev, json& parsed) {
    if (!error.empty()) return false;  // keep nothing more; the parser still checks the syntax
    const bool is_windows = top == "windows", is_paths = top == "paths";
    const bool in_item = (is_windows || is_paths) && depth >= 2;
    const bool item_end = in_item && depth == 2 && ev == json::parse_event_t::object_end;
    if (ev == json::parse_event_t::key && depth == 1) top = parsed.get<std::string>();
    if (in_item && !item_end) {
      if (is_windows && ++item_values > kMaxValuesPerWindow)
        bad(fmt::format("windows[{}]: more than {} values", windows.size(), kMaxValuesPerWindow));
      if (is_paths && ++item_values > kMaxValuesPerPath)
        bad(fmt::format("paths[{}]: more than {} values", paths.size(), kMaxValuesPerPath));
    } else if (!in_item && ++other_values > kMaxOtherValues) {
      bad(fmt::format("report: more than {} values outside the windows and paths", kMaxOtherValues));
    }
    if (!error.empty()) return false;
    if (!item_end) return true;
    item_values = 0;
    if (is_windows) {
      if (windows.size() >= max_windows) {
        bad(fmt::format("report.windows: more than {} windows", max_windows));
        return false;
      }
      WindowStats& w = windows.emplace_back();
      if (auto st = window_from_json(parsed, fmt::format("windows[{}]", windows.size() - 1), jr, w); !st)
        bad(st.error().message);
    } else {
      if (paths.size() >= max_paths) {
        bad(fmt::format("report.paths: more than {} paths", max_paths));
        return false;
      }
      PathTrace& p = paths.emplace_back();
      if (auto st = path_from_json(parsed, fmt::format("paths[{}]", paths.size() - 1), jr, p); !st)
        bad(st.error().message);
    }
    if (!jr.error.empty()) bad(jr.error);
    return false;  // converted: drop the object
  }
};

}  // namespace

Result<Report> decode_json(std::string_view text, size_t max_windows, size_t max_paths) {
  StreamDecode sd;
  sd.max_windows = std::min(max_windows, kMaxWindowsPerReport);
  sd.max_paths = std::min(max_paths, kMaxPathsPerReport);
  json j = json::parse(
      text, [&sd](int depth, json::parse_event_t ev, json& parsed) { return sd.on_event(depth, ev, parsed); },
      /*allow_exceptions=*/false);
  if (j.is_discarded()) return fail("body is not valid JSON");
  if (!sd.error.empty()) return fail("{}", sd.error);
  if (!j.is_object()) return fail("body must be a JSON object");
  JsonReader jr;
  Report r;
  r.agent = jr.str(j, "agent", "report", kMaxNameLength, true);
  r.seq = jr.u64(j, "seq", "report");
  if (auto it = j.find("health"); it != j.end()) {
    if (!it->is_object()) return fail("report.health: expected an object");
    r.health.cpu_percent = jr.num(*it, "cpu_percent", "health");
    r.health.rss_kb = jr.u64(*it, "rss_kb", "health");
    r.health.probes_per_s = jr.num(*it, "probes_per_s", "health");
    r.health.dropped_windows = jr.u64(*it, "dropped_windows", "health");
    r.health.spooled_windows = jr.u64(*it, "spooled_windows", "health");
    r.health.prober_restarts = jr.u64(*it, "prober_restarts", "health");
  }
  if (auto it = j.find("alarms"); it != j.end()) {
    if (!it->is_array()) return fail("report.alarms: expected an array");
    if (it->size() > kMaxAlarmsPerReport)
      return fail("report.alarms: more than {} alarms", kMaxAlarmsPerReport);
    for (size_t i = 0; i < it->size(); ++i) {
      const json& a = (*it)[i];
      std::string where = fmt::format("alarms[{}]", i);
      if (!a.is_object()) return fail("{}: expected an object", where);
      r.alarms.push_back({jr.str(a, "kind", where, kMaxNameLength, true),
                          jr.str(a, "message", where, kMaxTextLength, false), jr.i64(a, "unix_ns", where)});
    }
  }
  auto it = j.find("windows");
  if (it == j.end() || !it->is_array()) return fail("report.windows: expected an array");
  // The window objects were taken out as they ended; anything left in the array was not an object.
  if (!it->empty()) return fail("windows[{}]: expected an object", sd.windows.size());
  if (!jr.error.empty()) return fail("{}", jr.error);
  if (auto pit = j.find("paths"); pit != j.end()) {
    if (!pit->is_array()) return fail("report.paths: expected an array");
    if (!pit->empty()) return fail("paths[{}]: expected an object", sd.paths.size());
  }
  r.windows = std::move(sd.windows);
  r.paths = std::move(sd.paths);
  return r;
}

}  // namespace weft::proto
