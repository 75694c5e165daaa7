#include "probe/accumulator.hpp"

#include <algorithm>
#include <climits>

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
  for (auto& f : flows_) f.sent = f.received = f.lost = f.samples = 0;
}

void WindowAccumulator::add_answer(const RttSample& s, size_t flow) {
  ++sent_;
  ++received_;
  if (flow < flows_.size()) {
    FlowWindow& f = flows_[flow];
    ++f.sent, ++f.received;
    if (s.has_network)
      f.network_ns[f.samples++ % FlowWindow::kSamples] =
          static_cast<int32_t>(std::clamp<int64_t>(s.network_ns, 0, INT32_MAX));
  }
  if (s.weird) ++weird_;
  source_ = any_source_ ? worst(source_, s.source) : s.source;
  any_source_ = true;
  if (!latency_) return;
  rtt_.add(s.total_ns);
  if (s.has_network) network_.add(s.network_ns);
  if (s.has_responder_delay) delay_.add(s.responder_delay_ns);
}

void WindowAccumulator::finish(int64_t window_ns, WindowStats& out, std::span<const uint16_t> ports) {
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
  out.flows.clear();
  if (!flows_.empty()) {
    out.flows.resize(flows_.size());
    for (size_t i = 0; i < flows_.size(); ++i) {
      FlowWindow& f = flows_[i];
      FlowStats& o = out.flows[i];
      o.src_port = i < ports.size() ? ports[i] : 0;
      o.sent = f.sent;
      o.received = f.received;
      o.lost = f.lost;
      const uint32_t n = std::min(f.samples, FlowWindow::kSamples);
      if (n > 0) {  // nearest rank ceil(n/2), as the histograms' percentile(0.5)
        const uint32_t rank = (n - 1) / 2;
        std::nth_element(f.network_ns, f.network_ns + rank, f.network_ns + n);
        o.network_rtt_p50_ns = f.network_ns[rank];
      }
    }
  }
  index_ = -1;
}

}  // namespace weft::probe
