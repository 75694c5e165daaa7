#pragma once
// Long-term series: the controller pushes every window it takes in to a Prometheus remote-write
// receiver (Prometheus with --web.enable-remote-write-receiver, Mimir, Thanos receive,
// VictoriaMetrics...), so history beyond the store's retention lives in a time-series database
// built for it. The series are /metrics' per-pair families (docs/metrics.md) with the window's end
// as the sample's timestamp, so a pair's series in Prometheus is its windows, one sample each.
//
// Format: the remote-write 1.0 protocol: a prometheus.WriteRequest protobuf (encoded here: four
// small messages), snappy-compressed (libsnappy), POSTed with Content-Encoding: snappy.
//
// Every window once: the ingest queues each window it accepted (RemoteWriteQueue), late ones and
// an agent's spooled backlog included, and the writer sends the queue in batches, removing a batch
// only when the receiver answered 2xx. A receiver that is down, answers 5xx or 429 gets the same
// batch again after a back-off (1 s doubling to 30 s); a resent sample is the same labels,
// timestamp and value, which the receiver stores once. A 4xx is for good: the batch is split in
// halves until the window the receiver refuses is alone, and only that one is counted as rejected
// (Prometheus refuses a sample older than its series' newest unless its out_of_order_time_window
// covers it: docs/deploy.md). Each replica sends the windows it took in itself.
//
// Through a crash: the queue is also on disk (controller/remote_write_spool.hpp), so a controller
// killed with windows not yet acknowledged sends them after its restart.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/result.hpp"
#include "controller/mesh.hpp"
#include "controller/remote_write_queue.hpp"

namespace weft::controller {

struct RemoteSeries {
  std::vector<std::pair<std::string, std::string>> labels;  // __name__ first, then sorted by name
  double value = 0;
  int64_t timestamp_ms = 0;
};

// The WriteRequest protobuf of `series` (uncompressed).
std::string remote_write_request(const std::vector<RemoteSeries>& series);
// Snappy block compression (what remote write's Content-Encoding: snappy means).
Result<std::string> snappy_compress(std::string_view raw);
Result<std::string> snappy_uncompress(std::string_view compressed);

// The series of one window (loss, late and duplicate ratios; network RTT p50, p90, p99, max).
void pair_series(const QueuedWindow& w, std::vector<RemoteSeries>& out);

// Error::code of a push the receiver refused for good (4xx other than 429): sending it again
// would fail again.
inline constexpr int kRemoteWriteRefused = 0x57'0101;

class RemoteWriter {
 public:
  // At most this many windows per request (7 series each: up to 14,000 samples).
  static constexpr size_t kBatchWindows = 2000;

  RemoteWriter(Mesh& mesh, RemoteWriteQueue& queue) : mesh_(mesh), queue_(queue) {}
  ~RemoteWriter() { stop(); }
  RemoteWriter(const RemoteWriter&) = delete;
  RemoteWriter& operator=(const RemoteWriter&) = delete;

  // Sends the queue while config().remote_write is set (a reload turns it on, off, or points it
  // elsewhere). stop() makes one last attempt to send what is queued (a few seconds at most).
  void start();
  void stop();
  // One request carrying `windows` to `url`.
  Status push(const std::string& url, std::span<const QueuedWindow> windows);
  // Takes one batch off the queue and pushes it: how many windows the receiver took, or the error
  // (the batch is back in the queue if it may be tried again).
  Result<size_t> push_batch(const std::string& url);

 private:
  void run();
  void flush_at_stop();
  Mesh& mesh_;
  RemoteWriteQueue& queue_;
  size_t batch_limit_ = kBatchWindows;  // halved while a 4xx is narrowed down to its window
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> stopping_{false};
};

}  // namespace weft::controller
