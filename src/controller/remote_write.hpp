#pragma once
// Long-term series: the controller pushes each pair's latest window to a Prometheus remote-write
// receiver (Prometheus with --web.enable-remote-write-receiver, Mimir, Thanos receive,
// VictoriaMetrics...), so history beyond the store's retention lives in a time-series database
// built for it. The series are /metrics' per-pair families (docs/metrics.md) with the window's end
// as the sample's timestamp, so a pair's series in Prometheus is its windows, one sample each.
//
// Format: the remote-write 1.0 protocol: a prometheus.WriteRequest protobuf (encoded here: four
// small messages), snappy-compressed (libsnappy), POSTed with Content-Encoding: snappy.
// Each push sends the pairs whose latest window is newer than what was pushed last, so a quiet
// pair costs nothing and a series never gets a sample older than its last (which Prometheus
// would refuse). Several replicas pushing the same window send the same sample (same labels,
// timestamp and value), which the receiver takes once.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "base/result.hpp"
#include "controller/mesh.hpp"

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

// The series of one pair's window (loss, late and duplicate ratios; network RTT p50, p90, p99, max).
void pair_series(proto::Protocol protocol, const PairWindow& pw, std::vector<RemoteSeries>& out);

class RemoteWriter {
 public:
  explicit RemoteWriter(Mesh& mesh) : mesh_(mesh) {}
  ~RemoteWriter() { stop(); }
  RemoteWriter(const RemoteWriter&) = delete;
  RemoteWriter& operator=(const RemoteWriter&) = delete;

  // Pushes every config().remote_write_interval while config().remote_write is set (a reload
  // turns it on, off, or points it elsewhere).
  void start();
  void stop();
  // One push to `url` of what changed since the last; how many samples were sent.
  Result<size_t> push_once(const std::string& url);

 private:
  void run();
  Mesh& mesh_;
  std::map<std::tuple<int, std::string, std::string>, int64_t> pushed_end_;  // pair -> window end sent
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> stopping_{false};
};

}  // namespace weft::controller
