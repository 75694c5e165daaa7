#include "controller/render_cache.hpp"

#include <algorithm>
#include <chrono>

namespace weft::controller {

namespace {
int64_t mono_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

RenderCache::RenderCache(int64_t max_age_ns, int64_t cheap_ns, int64_t max_stale_ns)
    : max_age_ns_(max_age_ns),
      cheap_ns_(cheap_ns),
      max_stale_ns_(max_stale_ns),
      thread_([this] { refresher(); }) {}

RenderCache::~RenderCache() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::string RenderCache::get(const std::string& key, Compute compute) {
  std::shared_ptr<const std::string> cached;
  {
    std::lock_guard lk(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.value && it->second.cost_ns >= cheap_ns_ &&
        mono_ns() - it->second.computed_ns <= max_stale_ns_) {
      Entry& e = it->second;
      // An answer that takes long is refreshed less often: at most a tenth of the time goes to it.
      if (mono_ns() - e.computed_ns > std::max(max_age_ns_, 10 * e.cost_ns) && !e.refreshing) {
        e.refreshing = true;
        e.compute = std::move(compute);
        queue_.push_back(key);
        cv_.notify_one();
      }
      cached = e.value;
      stats_.served_cached++;
    }
  }
  if (cached) return *cached;  // copied outside the lock
  const int64_t t0 = mono_ns();
  std::string v = compute();
  const int64_t cost = mono_ns() - t0;
  {
    std::lock_guard lk(mu_);
    stats_.computed_inline++;
    if (entries_.size() < kMaxKeys || entries_.contains(key)) {
      Entry& e = entries_[key];
      if (!e.refreshing) e.compute = std::move(compute);
      e.value = std::make_shared<const std::string>(v);
      e.computed_ns = t0;
      e.cost_ns = cost;
    }
  }
  return v;
}

void RenderCache::refresher() {
  std::unique_lock lk(mu_);
  while (true) {
    cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    std::string key = std::move(queue_.front());
    queue_.pop_front();
    Compute fn = entries_[key].compute;
    lk.unlock();
    const int64_t t0 = mono_ns();
    auto v = std::make_shared<const std::string>(fn());
    const int64_t cost = mono_ns() - t0;
    lk.lock();
    Entry& e = entries_[key];
    e.value = std::move(v);
    e.computed_ns = t0;
    e.cost_ns = cost;
    e.refreshing = false;
    stats_.refreshed++;
  }
}

RenderCache::Stats RenderCache::stats() const {
  std::lock_guard lk(mu_);
  return stats_;
}

}  // namespace weft::controller
