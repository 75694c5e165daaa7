#include "controller/remote_write_queue.hpp"

#include <algorithm>

#include "base/log.hpp"
#include "controller/metrics_text.hpp"
#include "controller/remote_write_spool.hpp"

namespace weft::controller {

QueuedWindow queued_window(const std::string& src, const proto::WindowStats& w) {
  QueuedWindow q;
  q.protocol = w.protocol;
  q.src = src;
  q.dst = w.target;
  q.end_unix_ns = w.end_unix_ns;
  q.sent = w.sent;
  q.lost = w.lost;
  q.late = w.late;
  q.duplicate = w.duplicate;
  q.rtt_count = w.network_rtt.count;
  q.p50_ns = w.network_rtt.p50_ns;
  q.p90_ns = w.network_rtt.p90_ns;
  q.p99_ns = w.network_rtt.p99_ns;
  q.max_ns = w.network_rtt.max_ns;
  return q;
}

RemoteWriteQueue::RemoteWriteQueue() = default;
RemoteWriteQueue::~RemoteWriteQueue() = default;

void RemoteWriteQueue::set_spool_path(std::string path) {
  std::lock_guard lk(mu_);
  spool_path_ = std::move(path);
}

std::string RemoteWriteQueue::spool_path() const {
  std::lock_guard lk(mu_);
  return spool_ ? spool_->path() : std::string();
}

void RemoteWriteQueue::set_enabled(bool on) {
  std::lock_guard lk(mu_);
  if (!on) {
    q_.clear();
    pending_.clear();
    if (spool_) {
      // Off means the backlog is given up: the spool must not bring it back at the next start.
      if (auto s = spool_->acknowledge_until(spool_->end()); !s) log().warn("{}", s.error().message);
      spool_.reset();
      spooling_.store(false, std::memory_order_release);
    }
    spool_tried_ = false;
  } else if (!spool_tried_) {
    open_spool_locked();
  }
  enabled_.store(on, std::memory_order_relaxed);
}

void RemoteWriteQueue::open_spool_locked() {
  spool_tried_ = true;
  if (spool_path_.empty()) return;
  auto o = RemoteWriteSpool::open(spool_path_);
  if (!o) {
    log().error(
        "{}; remote write keeps its queue in memory only (a crash loses what the receiver has not "
        "acknowledged)",
        o.error().message);
    return;
  }
  spool_ = std::move(o->spool);
  auto& owed = o->scan.windows;
  if (!owed.empty())
    log().info("remote_write spool {}: {} windows owed from before the restart, queued to be sent",
               spool_path_, owed.size());
  recovered_.fetch_add(owed.size(), std::memory_order_relaxed);
  // Older than anything queued since (which is nothing while it was off).
  q_.insert(q_.begin(), std::make_move_iterator(owed.begin()), std::make_move_iterator(owed.end()));
  trim_locked();
  spool_bytes_.store(spool_->file_bytes(), std::memory_order_relaxed);
  spooling_.store(true, std::memory_order_release);
}

void RemoteWriteQueue::spool_done_locked() {
  if (!spool_) return;
  uint64_t owed = spool_->end();
  if (in_flight_ > 0) owed = std::min(owed, in_flight_pos_);
  if (!q_.empty()) owed = std::min(owed, q_.front().spool_pos);
  if (!pending_.empty()) owed = std::min(owed, *pending_.begin());
  if (auto s = spool_->acknowledge_until(owed); !s && spool_errors_++ % 100 == 0)
    log().error("{}", s.error().message);
  spool_bytes_.store(spool_->file_bytes(), std::memory_order_relaxed);
}

void RemoteWriteQueue::sync_spool() {
  if (!spool_) return;
  if (auto s = spool_->sync(); !s && spool_errors_++ % 100 == 0) log().error("{}", s.error().message);
}

void RemoteWriteQueue::set_capacity(size_t windows) {
  std::lock_guard lk(mu_);
  capacity_ = windows == 0 ? 1 : windows;
  trim_locked();
  spool_done_locked();
}

void RemoteWriteQueue::enqueue(const std::string& src, std::span<const proto::WindowStats> windows) {
  commit(prepare(src, windows));
}

RemoteWriteQueue::Pending RemoteWriteQueue::prepare(const std::string& src,
                                                    std::span<const proto::WindowStats> windows) {
  Pending p;
  if (!enabled() || windows.empty()) return p;
  // Copied and encoded before the lock: the ingest threads contend only for the append itself.
  p.windows.reserve(windows.size());
  for (const auto& w : windows) p.windows.push_back(queued_window(src, w));
  thread_local std::string frames;
  frames.clear();
  const bool encoded = spooling_.load(std::memory_order_acquire);
  if (encoded) RemoteWriteSpool::encode(p.windows, frames);
  {
    std::lock_guard lk(mu_);
    if (spool_) {
      if (!encoded) RemoteWriteSpool::encode(p.windows, frames);  // opened meanwhile
      // One write per report, before the report is answered; no fsync (sync_spool()).
      if (auto at = spool_->append(frames)) {
        for (auto& w : p.windows) w.spool_pos += *at;
      } else {
        for (auto& w : p.windows) w.spool_pos = spool_->end();
        if (spool_errors_++ % 1000 == 0)
          log().error("{} ({} windows queued in memory only: a crash before they are sent loses them)",
                      at.error().message, p.windows.size());
      }
      pending_.insert(p.windows.front().spool_pos);
      p.spooled = true;
      spool_bytes_.store(spool_->file_bytes(), std::memory_order_relaxed);
    }
  }
  if (frames.capacity() > (16u << 20)) std::string().swap(frames);
  return p;
}

void RemoteWriteQueue::commit(Pending p) {
  if (p.windows.empty()) return;
  std::lock_guard lk(mu_);
  if (p.spooled)
    if (auto it = pending_.find(p.windows.front().spool_pos); it != pending_.end()) pending_.erase(it);
  if (!enabled()) return;
  // In spool order: a report prepared earlier may be committed later than one prepared after it.
  auto at = q_.end();
  const uint64_t pos = p.windows.front().spool_pos;
  while (at != q_.begin() && std::prev(at)->spool_pos > pos) --at;
  q_.insert(at, std::make_move_iterator(p.windows.begin()), std::make_move_iterator(p.windows.end()));
  trim_locked();
}

void RemoteWriteQueue::abandon(Pending p) {
  if (!p.spooled || p.windows.empty()) return;
  std::lock_guard lk(mu_);
  if (auto it = pending_.find(p.windows.front().spool_pos); it != pending_.end()) pending_.erase(it);
}

// Dropping the oldest keeps the receiver's recent data complete, which alerting reads; what is
// taken (in flight) counts towards the bound but is not dropped under the writer's feet.
void RemoteWriteQueue::trim_locked() {
  while (!q_.empty() && q_.size() + in_flight_ > capacity_) {
    q_.pop_front();
    dropped_.fetch_add(1, std::memory_order_relaxed);
  }
}

std::vector<QueuedWindow> RemoteWriteQueue::take(size_t max) {
  std::lock_guard lk(mu_);
  const size_t n = std::min(max, q_.size());
  std::vector<QueuedWindow> out(std::make_move_iterator(q_.begin()),
                                std::make_move_iterator(q_.begin() + static_cast<ptrdiff_t>(n)));
  q_.erase(q_.begin(), q_.begin() + static_cast<ptrdiff_t>(n));
  if (in_flight_ == 0 && n > 0) in_flight_pos_ = out.front().spool_pos;
  in_flight_ += n;
  return out;
}

void RemoteWriteQueue::acknowledged(size_t n) {
  std::lock_guard lk(mu_);
  in_flight_ -= std::min(n, in_flight_);
  acknowledged_.fetch_add(n, std::memory_order_relaxed);
  spool_done_locked();
}

void RemoteWriteQueue::rejected(size_t n) {
  std::lock_guard lk(mu_);
  in_flight_ -= std::min(n, in_flight_);
  rejected_.fetch_add(n, std::memory_order_relaxed);
  spool_done_locked();
}

void RemoteWriteQueue::retry(std::vector<QueuedWindow> batch) {
  std::lock_guard lk(mu_);
  in_flight_ -= std::min(batch.size(), in_flight_);
  if (!enabled()) return;
  const bool in_order = batch.empty() || q_.empty() || batch.back().spool_pos <= q_.front().spool_pos;
  const auto n = static_cast<ptrdiff_t>(batch.size());
  q_.insert(q_.begin(), std::make_move_iterator(batch.begin()), std::make_move_iterator(batch.end()));
  // A report committed while the batch was out may be older in the spool: keep the queue in
  // spool order (its front is then the oldest owed window).
  if (!in_order)
    std::inplace_merge(
        q_.begin(), q_.begin() + n, q_.end(),
        [](const QueuedWindow& a, const QueuedWindow& b) { return a.spool_pos < b.spool_pos; });
  trim_locked();
  spool_done_locked();  // what trim_locked() dropped is done too
}

size_t RemoteWriteQueue::size() const {
  std::lock_guard lk(mu_);
  return q_.size() + in_flight_;
}

RemoteWriteQueue::Stats RemoteWriteQueue::stats() const {
  Stats s;
  s.queued = size();
  s.acknowledged = acknowledged_.load(std::memory_order_relaxed);
  s.rejected = rejected_.load(std::memory_order_relaxed);
  s.dropped = dropped_.load(std::memory_order_relaxed);
  s.failed_pushes = failed_pushes_.load(std::memory_order_relaxed);
  s.recovered = recovered_.load(std::memory_order_relaxed);
  s.spool_bytes = spool_bytes_.load(std::memory_order_relaxed);
  return s;
}

void RemoteWriteQueue::render(PromText& t) const {
  const Stats s = stats();
  t.family("weft_remote_write_queued_windows", PromType::gauge,
           "Windows accepted and not yet acknowledged by the remote-write receiver.");
  t.sample(static_cast<double>(s.queued));
  t.family("weft_remote_write_windows_total", PromType::counter,
           "Windows leaving the remote-write queue, by outcome: sent (acknowledged), rejected (a 4xx "
           "for good), dropped (the oldest, past remote_write_queue_windows).");
  t.sample({{"result", "sent"}}, static_cast<double>(s.acknowledged));
  t.sample({{"result", "rejected"}}, static_cast<double>(s.rejected));
  t.sample({{"result", "dropped"}}, static_cast<double>(s.dropped));
  t.family("weft_remote_write_failed_pushes_total", PromType::counter,
           "Remote-write requests that failed and will be tried again (receiver down, 5xx, 429).");
  t.sample(static_cast<double>(s.failed_pushes));
  t.family("weft_remote_write_recovered_windows_total", PromType::counter,
           "Windows read back from the remote-write spool at start: accepted before a crash or stop and "
           "not yet acknowledged by the receiver.");
  t.sample(static_cast<double>(s.recovered));
  t.family("weft_remote_write_spool_bytes", PromType::gauge,
           "Size of the remote-write spool file (0: no spool, the queue is in memory only).");
  t.sample(static_cast<double>(s.spool_bytes));
}

}  // namespace weft::controller
