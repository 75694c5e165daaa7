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
//
// Durable: with a spool (set_spool_path; docs/controller.md "Remote write through a crash") every
// window queued is also appended to a file before the report is answered, and what the receiver
// acknowledged is recorded there, so a controller killed without a chance to flush sends, once
// restarted, what it still owed. Without one (remote_write_spool: off) the queue is memory only.
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "proto/window_stats.hpp"

namespace weft::controller {

class PromText;
class RemoteWriteSpool;

// What remote write sends of one window (pair_series in remote_write.hpp): a fifth of a WindowStats.
struct QueuedWindow {
  proto::Protocol protocol = proto::Protocol::udp;
  std::string src, dst;
  int64_t end_unix_ns = 0;
  uint64_t sent = 0, lost = 0, late = 0, duplicate = 0;
  uint64_t rtt_count = 0;  // network RTT samples (0: no RTT series)
  int64_t p50_ns = 0, p90_ns = 0, p99_ns = 0, max_ns = 0;
  uint64_t spool_pos = 0;  // where its record starts in the spool (logical offset; 0 without one)
};

QueuedWindow queued_window(const std::string& src, const proto::WindowStats& w);

class RemoteWriteQueue {
 public:
  static constexpr size_t kDefaultCapacity = 1'000'000;

  RemoteWriteQueue();
  ~RemoteWriteQueue();
  RemoteWriteQueue(const RemoteWriteQueue&) = delete;
  RemoteWriteQueue& operator=(const RemoteWriteQueue&) = delete;

  // The spool file ("" : none, memory only). Opened, and what it still owes queued, when the
  // queue is next enabled; a spool that cannot be opened is logged and the queue stays in memory.
  void set_spool_path(std::string path);
  // Off (remote_write unset): enqueue() keeps nothing; turning it off forgets what was queued
  // (the spool too).
  void set_enabled(bool on);
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  void set_capacity(size_t windows);

  // Windows `src` reported that the ingest accepted (no-op when off): prepare() then commit().
  void enqueue(const std::string& src, std::span<const proto::WindowStats> windows);
  // In two steps around the store's commit: prepare() copies the windows and writes them to the
  // spool (one pwrite), commit() queues them once the store made them durable, abandon() drops
  // them when it failed (their spool records are passed over by the next acknowledgement). A
  // prepared report holds the spool's "acknowledged up to" back until it is committed or abandoned.
  struct Pending {
    std::vector<QueuedWindow> windows;
    bool spooled = false;  // its first window's spool_pos is in pending_
  };
  Pending prepare(const std::string& src, std::span<const proto::WindowStats> windows);
  void commit(Pending p);
  void abandon(Pending p);

  // Up to `max` windows from the front (the oldest). Give them back with acknowledged(),
  // rejected() or retry().
  std::vector<QueuedWindow> take(size_t max);
  // The receiver took them.
  void acknowledged(size_t n);
  // The receiver refused them for good (a 4xx: malformed, or too old for it): not sent again.
  void rejected(size_t n);
  // Not delivered (receiver down, 5xx, 429): back to the front, oldest dropped past the bound.
  void retry(std::vector<QueuedWindow> batch);

  // fdatasync() of the spool (the writer thread, once per push round): a power cut then loses
  // at most what was queued since. Only from the thread that calls set_enabled().
  void sync_spool();
  // The spool's path, or "" when the queue is memory only.
  std::string spool_path() const;

  size_t size() const;
  struct Stats {
    uint64_t queued = 0;  // windows waiting now (taken ones included until they come back)
    uint64_t acknowledged = 0, rejected = 0, dropped = 0, failed_pushes = 0;
    uint64_t recovered = 0;    // read back from the spool at start
    uint64_t spool_bytes = 0;  // the spool file's size
  };
  Stats stats() const;
  void count_failed_push() { failed_pushes_.fetch_add(1, std::memory_order_relaxed); }
  // The weft_remote_write_* families (docs/metrics.md).
  void render(PromText& t) const;

 private:
  void trim_locked();
  void open_spool_locked();
  // Saves "everything before the oldest window still owed is done" in the spool.
  void spool_done_locked();
  mutable std::mutex mu_;
  std::deque<QueuedWindow> q_;
  size_t in_flight_ = 0;             // taken and not yet given back
  uint64_t in_flight_pos_ = 0;       // spool_pos of the oldest window taken
  std::multiset<uint64_t> pending_;  // spool_pos of each prepared report's first window
  std::string spool_path_;
  bool spool_tried_ = false;  // opening it was attempted (once per enable)
  std::unique_ptr<RemoteWriteSpool> spool_;
  std::atomic<bool> spooling_{false};  // spool_ is set (read without the lock by enqueue)
  uint64_t spool_errors_ = 0;
  size_t capacity_ = kDefaultCapacity;
  std::atomic<bool> enabled_{false};
  std::atomic<uint64_t> acknowledged_{0}, rejected_{0}, dropped_{0}, failed_pushes_{0}, recovered_{0};
  std::atomic<uint64_t> spool_bytes_{0};
};

}  // namespace weft::controller
