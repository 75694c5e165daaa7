#pragma once
// Per-target window accumulation: counts and three histograms, folded into a WindowStats when the
// window ends. Windows are aligned to multiples of the window length on the wall clock, so that
// every prober's windows line up.
#include <cstdint>

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
  void add_lost() { ++sent_, ++lost_; }
  void add_answer(const RttSample& s);
  void add_late() { ++late_; }
  void add_duplicate() { ++duplicate_; }
  void add_malformed() { ++malformed_; }

  // Fills `out`'s counts and summaries for window [index*W, (index+1)*W) and closes the window.
  void finish(int64_t window_ns, WindowStats& out);

 private:
  int64_t index_ = -1;
  uint64_t sent_ = 0, received_ = 0, lost_ = 0, late_ = 0, duplicate_ = 0, malformed_ = 0, weird_ = 0;
  TimestampSource source_ = TimestampSource::hardware;  // worst seen; hardware = none seen yet
  bool any_source_ = false;
  bool latency_ = true;
  LogHistogram rtt_, network_, delay_;
};

}  // namespace weft::probe
