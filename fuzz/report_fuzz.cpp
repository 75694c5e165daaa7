// Fuzzes the controller's biggest untrusted parser, the agent report decoder (proto/report.hpp),
// in both encodings: it must never crash or read out of bounds, and whatever it accepts must
// survive encode -> decode unchanged (so what the controller stores is what it understood).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "proto/report.hpp"

#ifndef WEFT_FUZZ_SEEDGEN
namespace {

using namespace weft::proto;

bool same(const LatencySummary& a, const LatencySummary& b) {
  return a.count == b.count && a.min_ns == b.min_ns && a.mean_ns == b.mean_ns && a.p50_ns == b.p50_ns &&
         a.p90_ns == b.p90_ns && a.p95_ns == b.p95_ns && a.p99_ns == b.p99_ns && a.p999_ns == b.p999_ns &&
         a.max_ns == b.max_ns;
}

bool same(const WindowStats& a, const WindowStats& b) {
  return a.protocol == b.protocol && a.target == b.target && a.target_address == b.target_address &&
         a.start_unix_ns == b.start_unix_ns && a.end_unix_ns == b.end_unix_ns && a.sent == b.sent &&
         a.received == b.received && a.lost == b.lost && a.late == b.late && a.duplicate == b.duplicate &&
         a.malformed == b.malformed && a.weird == b.weird && a.timestamp_source == b.timestamp_source &&
         same(a.rtt_incl_responder_delay, b.rtt_incl_responder_delay) && same(a.network_rtt, b.network_rtt) &&
         same(a.responder_delay, b.responder_delay) && a.flows == b.flows;
}

// Health's two doubles travel as rounded thousandths (binary) and are left out: rounding is by design.
bool same(const Report& a, const Report& b) {
  if (a.agent != b.agent || a.seq != b.seq || a.health.rss_kb != b.health.rss_kb ||
      a.health.dropped_windows != b.health.dropped_windows ||
      a.health.spooled_windows != b.health.spooled_windows ||
      a.health.prober_restarts != b.health.prober_restarts || a.alarms.size() != b.alarms.size() ||
      a.windows.size() != b.windows.size() || a.paths != b.paths)
    return false;
  for (size_t i = 0; i < a.alarms.size(); ++i)
    if (a.alarms[i].kind != b.alarms[i].kind || a.alarms[i].message != b.alarms[i].message ||
        a.alarms[i].unix_ns != b.alarms[i].unix_ns)
      return false;
  for (size_t i = 0; i < a.windows.size(); ++i)
    if (!same(a.windows[i], b.windows[i])) return false;
  return true;
}

void check_binary(std::string_view in) {
  auto r = decode_binary(in);
  if (!r) return;
  // The window list it points at lies inside the input (the optional sections after it) and decodes
  // to the same windows.
  if (r->encoded_windows.data() < in.data() ||
      r->encoded_windows.data() + r->encoded_windows.size() > in.data() + in.size())
    std::abort();
  auto list = decode_window_list(r->encoded_windows);
  if (!list || list->size() != r->windows.size()) std::abort();
  const std::string again = encode_binary(*r);
  auto r2 = decode_binary(again);
  if (!r2 || !same(*r, *r2)) std::abort();
}

// The binary form sends no values for an empty summary, so a JSON summary with count 0 and values
// set (which ingest validation refuses: "count is 0 but values are set") reads back as all zeros.
void zero_empty_summaries(Report& r) {
  for (auto& w : r.windows)
    for (LatencySummary* s : {&w.rtt_incl_responder_delay, &w.network_rtt, &w.responder_delay})
      if (s->count == 0) *s = {};
}

void check_json(std::string_view in) {
  auto r = decode_json(in);
  if (!r) return;
  auto r2 = decode_json(encode_json(*r));
  if (!r2 || !same(*r, *r2)) std::abort();
  // The same report in the other encoding is accepted too, unless a name or alarm is longer than
  // the binary format's limits (JSON checks the same limits, so it never is).
  auto r3 = decode_binary(encode_binary(*r));
  zero_empty_summaries(*r);
  if (!r3 || !same(*r, *r3)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  check_binary(in);
  check_json(in);
  return 0;
}
#endif
