#include "controller/request_stats.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace weft::controller {

namespace {
constexpr std::array<std::string_view, RequestStats::kStages> kStageNames = {"read", "queue", "handler",
                                                                             "reply"};
constexpr std::array<std::string_view, 5> kClassNames = {"1xx", "2xx", "3xx", "4xx", "5xx"};
}  // namespace

RequestStats::RequestStats(std::vector<std::string> routes) : names_(std::move(routes)) {
  names_.emplace_back("other");
  per_ = std::make_unique<PerRoute[]>(names_.size());
}

// A linear scan of a dozen short strings costs less than building a key; no allocation.
size_t RequestStats::index(std::string_view method, std::string_view pattern) const {
  for (size_t i = 0; i + 1 < names_.size(); ++i) {
    std::string_view n = names_[i];
    if (n.size() == method.size() + 1 + pattern.size() && n.starts_with(method) && n[method.size()] == ' ' &&
        n.ends_with(pattern))
      return i;
  }
  return names_.size() - 1;
}

size_t RequestStats::index(std::string_view route) const {
  auto it = std::find(names_.begin(), names_.end(), route);
  return it == names_.end() ? names_.size() - 1 : static_cast<size_t>(it - names_.begin());
}

void RequestStats::record(const net::http::RequestTiming& t) {
  PerRoute& r = per_[index(t.method, t.pattern)];
  const int64_t ns[kStages] = {t.read_ns, t.queue_ns, t.handler_ns, t.reply_ns};
  for (size_t s = 0; s < kStages; ++s) {
    const int64_t v = std::max<int64_t>(ns[s], 0);
    const double sec = static_cast<double>(v) / 1e9;
    size_t b = static_cast<size_t>(std::lower_bound(kBounds.begin(), kBounds.end(), sec) - kBounds.begin());
    r.stages[s].buckets[b].fetch_add(1, std::memory_order_relaxed);
    r.stages[s].sum_ns.fetch_add(static_cast<uint64_t>(v), std::memory_order_relaxed);
  }
  if (t.status >= 100 && t.status < 600)
    r.status[static_cast<size_t>(t.status / 100 - 1)].fetch_add(1, std::memory_order_relaxed);
}

uint64_t RequestStats::count(std::string_view route) const {
  const Hist& h = per_[index(route)].stages[0];
  uint64_t n = 0;
  for (const auto& b : h.buckets) n += b.load(std::memory_order_relaxed);
  return n;
}

uint64_t RequestStats::at_most(std::string_view route, size_t stage, double bound_s) const {
  const Hist& h = per_[index(route)].stages[std::min(stage, kStages - 1)];
  uint64_t n = 0;
  for (size_t b = 0; b < kBounds.size() && kBounds[b] <= bound_s; ++b)
    n += h.buckets[b].load(std::memory_order_relaxed);
  return n;
}

void RequestStats::render(PromText& t) const {
  t.family("weft_controller_http_request_stage_seconds", PromType::histogram,
           "Where the controller's HTTP requests spent their time, by route and stage: read (first to "
           "last byte received), queue (waiting for a worker of the route's lane), handler, reply (back "
           "to the event loop until the answer starts going out).");
  for (size_t i = 0; i < names_.size(); ++i) {
    for (size_t s = 0; s < kStages; ++s) {
      const Hist& h = per_[i].stages[s];
      uint64_t cum = 0;
      std::array<uint64_t, kBounds.size() + 1> counts{};
      for (size_t b = 0; b < counts.size(); ++b) counts[b] = h.buckets[b].load(std::memory_order_relaxed);
      uint64_t total = 0;
      for (auto c : counts) total += c;
      if (total == 0) continue;  // routes never asked are left out
      for (size_t b = 0; b < kBounds.size(); ++b) {
        cum += counts[b];
        const std::string le = fmt::format("{}", kBounds[b]);
        t.sample("_bucket", {{"route", names_[i]}, {"stage", kStageNames[s]}, {"le", le}},
                 static_cast<double>(cum));
      }
      t.sample("_bucket", {{"route", names_[i]}, {"stage", kStageNames[s]}, {"le", "+Inf"}},
               static_cast<double>(total));
      t.sample("_sum", {{"route", names_[i]}, {"stage", kStageNames[s]}},
               static_cast<double>(h.sum_ns.load(std::memory_order_relaxed)) / 1e9);
      t.sample("_count", {{"route", names_[i]}, {"stage", kStageNames[s]}}, static_cast<double>(total));
    }
  }
  t.family("weft_controller_http_responses_total", PromType::counter,
           "HTTP requests answered by a handler, by route and status class.");
  for (size_t i = 0; i < names_.size(); ++i)
    for (size_t c = 0; c < kClassNames.size(); ++c)
      if (uint64_t n = per_[i].status[c].load(std::memory_order_relaxed); n > 0)
        t.sample({{"route", names_[i]}, {"code", kClassNames[c]}}, static_cast<double>(n));
}

}  // namespace weft::controller
