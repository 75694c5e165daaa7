#pragma once
// Per-target window accumulation: counts and three histograms, folded into a WindowStats when the
// window ends. Windows are aligned to multiples of the window length on the wall clock, so that
// every prober's windows line up.
#include <cstdint>
#include <span>
#include <vector>

#include "base/histogram.hpp"
#include "probe/rtt.hpp"
#include "probe/window.hpp"

namespace weft::probe {

// Window number of a time (floor division, also for times before the epoch).
inline int64_t window_index(int64_t t_ns, int64_t window_ns) {
  int64_t q = t_ns / window_ns;
  if ((t_ns % window_ns) != 0 && t_ns < 0) --q;
  return q;
}
inline int64_t window_start(int64_t index, int64_t window_ns) { return index * window_ns; }

LatencySummary summarize(const LogHistogram& h);

class WindowAccumulator {
 public:
  int64_t index() const { return index_; }
  bool open() const { return index_ >= 0; }
  bool empty() const { return sent_ == 0 && late_ == 0 && duplicate_ == 0 && malformed_ == 0; }

  void start(int64_t index);
  // Off: the window counts probes but keeps no latency histograms, and finish() leaves its three
  // summaries empty (for a caller that never reads them; issue 17, RSS). On by default.
  void keep_latency(bool on) { latency_ = on; }
  // Per-flow counters for `n` flows (n > 1; set up once, with the target: nothing is allocated per
  // probe). A probe's `flow` is its source port's index; one out of range counts for the pair only.
  void keep_flows(size_t n) { flows_.assign(n > 1 ? n : 0, FlowWindow{}); }
  void add_lost(size_t flow = 0) {
    ++sent_, ++lost_;
    if (flow < flows_.size()) ++flows_[flow].sent, ++flows_[flow].lost;
  }
  void add_answer(const RttSample& s, size_t flow = 0);
  void add_late() { ++late_; }
  void add_duplicate() { ++duplicate_; }
  void add_malformed() { ++malformed_; }

  // Fills `out`'s counts and summaries for window [index*W, (index+1)*W) and closes the window;
  // with flows, also out.flows, flow i with source port ports[i].
  void finish(int64_t window_ns, WindowStats& out, std::span<const uint16_t> ports = {});

 private:
  int64_t index_ = -1;
  uint64_t sent_ = 0, received_ = 0, lost_ = 0, late_ = 0, duplicate_ = 0, malformed_ = 0, weird_ = 0;
  TimestampSource source_ = TimestampSource::hardware;  // worst seen; hardware = none seen yet
  bool any_source_ = false;
  bool latency_ = true;
  LogHistogram rtt_, network_, delay_;
  // One flow's share of the window. Its network RTT median comes from its last kSamples samples
  // (a ring): at the default 10 probes/s over 8 flows a flow has about 12 a window, and a ring
  // costs 128 bytes where a histogram would take 1-3 KB per flow and window.
  struct FlowWindow {
    static constexpr uint32_t kSamples = 32;
    uint32_t sent = 0, received = 0, lost = 0, samples = 0;
    int32_t network_ns[kSamples];  // saturated at 2^31-1 ns (2.1 s, beyond any probe timeout)
  };
  std::vector<FlowWindow> flows_;
};

}  // namespace weft::probe
