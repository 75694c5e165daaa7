#include "controller/remote_write_queue.hpp"

#include "controller/metrics_text.hpp"

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

void RemoteWriteQueue::set_enabled(bool on) {
  std::lock_guard lk(mu_);
  if (!on) q_.clear();
  enabled_.store(on, std::memory_order_relaxed);
}

void RemoteWriteQueue::set_capacity(size_t windows) {
  std::lock_guard lk(mu_);
  capacity_ = windows == 0 ? 1 : windows;
  trim_locked();
}

void RemoteWriteQueue::enqueue(const std::string& src, std::span<const proto::WindowStats> windows) {
  if (!enabled() || windows.empty()) return;
  std::lock_guard lk(mu_);
  for (const auto& w : windows) q_.push_back(queued_window(src, w));
  trim_locked();
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
  in_flight_ += n;
  return out;
}

void RemoteWriteQueue::acknowledged(size_t n) {
  std::lock_guard lk(mu_);
  in_flight_ -= std::min(n, in_flight_);
  acknowledged_.fetch_add(n, std::memory_order_relaxed);
}

void RemoteWriteQueue::rejected(size_t n) {
  std::lock_guard lk(mu_);
  in_flight_ -= std::min(n, in_flight_);
  rejected_.fetch_add(n, std::memory_order_relaxed);
}

void RemoteWriteQueue::retry(std::vector<QueuedWindow> batch) {
  std::lock_guard lk(mu_);
  in_flight_ -= std::min(batch.size(), in_flight_);
  if (!enabled()) return;
  q_.insert(q_.begin(), std::make_move_iterator(batch.begin()), std::make_move_iterator(batch.end()));
  trim_locked();
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
}

}  // namespace weft::controller
