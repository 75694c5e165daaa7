#pragma once
// Answers that walk the whole mesh (/metrics, /api/v1/suspects) computed once per interval, not
// once per request. At 10,000 agents such an answer copies and ranks a million pairs; if every
// scrape and every dashboard tab did that, the read API's workers would be busy with it and every
// other read request would queue behind them.
//
// The rule: an answer that was cheap to compute the last time (under `cheap_ns`) is computed again
// for every request, so a small mesh always sees its latest report. An expensive one is served as
// last computed, at most `max_age_ns` old: when it is older, the request still gets it at once and
// the cache's own thread computes the next one (one refresh at a time per key). An answer that
// took c to compute is refreshed at most every max(max_age_ns, 10 c), so refreshing costs at most a
// tenth of a core however large the mesh. Only a key's first request waits for a computation, and
// one that comes after the cached answer grew older than max_stale_ns.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace weft::controller {

class RenderCache {
 public:
  using Compute = std::function<std::string()>;
  // At most kMaxKeys keys are kept (a key is e.g. the protocol and threshold of a suspects query);
  // further keys are computed per request, uncached.
  static constexpr size_t kMaxKeys = 32;

  // `max_stale_ns`: a cached answer older than this is not served at all (the request computes a
  // new one and waits): after a quiet spell the first dashboard load must not show a mesh from
  // minutes ago as if it were now.
  RenderCache(int64_t max_age_ns, int64_t cheap_ns, int64_t max_stale_ns = INT64_MAX);
  ~RenderCache();  // waits for a refresh under way
  RenderCache(const RenderCache&) = delete;
  RenderCache& operator=(const RenderCache&) = delete;

  // The answer for `key`. `compute` must stay valid for the cache's lifetime (it may run later,
  // on the cache's thread) and must give the same answer for the same key at the same state.
  std::string get(const std::string& key, Compute compute);

  struct Stats {
    uint64_t computed_inline = 0, served_cached = 0, refreshed = 0;
  };
  Stats stats() const;

 private:
  struct Entry {
    std::shared_ptr<const std::string> value;
    int64_t computed_ns = 0;  // steady clock
    int64_t cost_ns = 0;
    bool refreshing = false;
    Compute compute;
  };
  void refresher();

  const int64_t max_age_ns_, cheap_ns_, max_stale_ns_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Entry> entries_;
  std::deque<std::string> queue_;  // keys to refresh
  bool stopping_ = false;
  Stats stats_;
  std::thread thread_;
};

}  // namespace weft::controller
