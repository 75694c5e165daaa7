#pragma once
// The windows remote write still owes its receiver (controller/remote_write.hpp). The ingest puts
// every window it accepted here (after the store made it durable, so each window once: resends
// and copies are already sorted out as duplicates), the writer takes batches off the front and
// removes them only when the receiver acknowledged them; a batch that failed goes back to the
// front for the next try. Late windows and an agent's spooled backlog are queued like any other,
// each with its own end time, so every window reaches the receiver, not only each pair's latest.
//
// Bounded: past `capacity` windows (config remote_write_queue_windows) the oldest are dropped and
// counted (weft_remote_write_windows_total{result="dropped"}): a receiver down for long costs
// memory up to the bound (about 150 bytes a window), never more.
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "proto/window_stats.hpp"

namespace weft::controller {

class PromText;

// What remote write sends of one window (pair_series in remote_write.hpp): a fifth of a WindowStats.
struct QueuedWindow {
  proto::Protocol protocol = proto::Protocol::udp;
  std::string src, dst;
  int64_t end_unix_ns = 0;
  uint64_t sent = 0, lost = 0, late = 0, duplicate = 0;
  uint64_t rtt_count = 0;  // network RTT samples (0: no RTT series)
  int64_t p50_ns = 0, p90_ns = 0, p99_ns = 0, max_ns = 0;
};

QueuedWindow queued_window(const std::string& src, const proto::WindowStats& w);

class RemoteWriteQueue {
 public:
  static constexpr size_t kDefaultCapacity = 1'000'000;

  // Off (remote_write unset): enqueue() keeps nothing; turning it off forgets what was queued.
  void set_enabled(bool on);
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  void set_capacity(size_t windows);

  // Windows `src` reported that the ingest accepted (no-op when off).
  void enqueue(const std::string& src, std::span<const proto::WindowStats> windows);

  // Up to `max` windows from the front (the oldest). Give them back with acknowledged(),
  // rejected() or retry().
  std::vector<QueuedWindow> take(size_t max);
  // The receiver took them.
  void acknowledged(size_t n);
  // The receiver refused them for good (a 4xx: malformed, or too old for it): not sent again.
  void rejected(size_t n);
  // Not delivered (receiver down, 5xx, 429): back to the front, oldest dropped past the bound.
  void retry(std::vector<QueuedWindow> batch);

  size_t size() const;
  struct Stats {
    uint64_t queued = 0;  // windows waiting now (taken ones included until they come back)
    uint64_t acknowledged = 0, rejected = 0, dropped = 0, failed_pushes = 0;
  };
  Stats stats() const;
  void count_failed_push() { failed_pushes_.fetch_add(1, std::memory_order_relaxed); }
  // The weft_remote_write_* families (docs/metrics.md).
  void render(PromText& t) const;

 private:
  void trim_locked();
  mutable std::mutex mu_;
  std::deque<QueuedWindow> q_;
  size_t in_flight_ = 0;  // taken and not yet given back
  size_t capacity_ = kDefaultCapacity;
  std::atomic<bool> enabled_{false};
  std::atomic<uint64_t> acknowledged_{0}, rejected_{0}, dropped_{0}, failed_pushes_{0};
};

}  // namespace weft::controller
