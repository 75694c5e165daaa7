#include "probe/accumulator.hpp"

namespace weft::probe {

LatencySummary summarize(const LogHistogram& h) {
  LatencySummary s;
  s.count = h.count();
  if (s.count == 0) return s;
  s.min_ns = h.min();
  s.mean_ns = h.mean();
  s.p50_ns = h.percentile(0.50);
  s.p90_ns = h.percentile(0.90);
  s.p95_ns = h.percentile(0.95);
  s.p99_ns = h.percentile(0.99);
  s.p999_ns = h.percentile(0.999);
  s.max_ns = h.max();
  return s;
}

void WindowAccumulator::start(int64_t index) {
  index_ = index;
  sent_ = received_ = lost_ = late_ = duplicate_ = malformed_ = weird_ = 0;
  source_ = TimestampSource::hardware;
  any_source_ = false;
  rtt_.reset();
  network_.reset();
  delay_.reset();
}

void WindowAccumulator::add_answer(const RttSample& s) {
  ++sent_;
  ++received_;
  if (s.weird) ++weird_;
  source_ = any_source_ ? worst(source_, s.source) : s.source;
  any_source_ = true;
  if (!latency_) return;
  rtt_.add(s.total_ns);
  if (s.has_network) network_.add(s.network_ns);
  if (s.has_responder_delay) delay_.add(s.responder_delay_ns);
}

void WindowAccumulator::finish(int64_t window_ns, WindowStats& out) {
  out.start_unix_ns = window_start(index_, window_ns);
  out.end_unix_ns = out.start_unix_ns + window_ns;
  out.sent = sent_;
  out.received = received_;
  out.lost = lost_;
  out.late = late_;
  out.duplicate = duplicate_;
  out.malformed = malformed_;
  out.weird = weird_;
  out.timestamp_source = any_source_ ? source_ : TimestampSource::user;
  out.rtt_incl_responder_delay = summarize(rtt_);
  out.network_rtt = summarize(network_);
  out.responder_delay = summarize(delay_);
  index_ = -1;
}

}  // namespace weft::probe
