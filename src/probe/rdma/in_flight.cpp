#include "probe/rdma/in_flight.hpp"

#include <algorithm>

namespace weft::probe {

RdmaInFlight::RdmaInFlight(size_t min_size, Resolve on_resolve) : on_resolve_(std::move(on_resolve)) {
  size_t n = 1024;
  while (n < min_size) n <<= 1;
  slots_.resize(n);
  mask_ = n - 1;
}

void RdmaInFlight::resolve(RdmaSlot& s, RdmaOutcome o) {
  s.state = o == RdmaOutcome::answered ? RdmaSlotState::done : RdmaSlotState::expired;
  --pending_;
  on_resolve_(s, o);
}

RdmaSlot& RdmaInFlight::start(uint64_t seq, uint32_t target, uint32_t gen, int64_t post_mono_ns,
                              int64_t deadline_mono_ns, int64_t deadline_unix_ns) {
  RdmaSlot& s = slots_[seq & mask_];
  if (s.state == RdmaSlotState::pending) resolve(s, RdmaOutcome::evicted);
  s = RdmaSlot{};
  s.seq = seq;
  s.state = RdmaSlotState::pending;
  s.target = target;
  s.target_gen = gen;
  s.deadline_mono_ns = deadline_mono_ns;
  s.deadline_unix_ns = deadline_unix_ns;
  s.timing.ping_post_mono_ns = post_mono_ns;
  ++pending_;
  if (oldest_ == 0) oldest_ = seq;
  next_ = seq + 1;
  return s;
}

RdmaMatch RdmaInFlight::classify(const RdmaSlot* s) const {
  if (!s) return RdmaMatch::unknown;
  if (s->state == RdmaSlotState::done) return RdmaMatch::duplicate;
  if (s->state == RdmaSlotState::expired) return RdmaMatch::late;
  return RdmaMatch::ok;
}

void RdmaInFlight::try_complete(RdmaSlot& s) {
  if (s.state == RdmaSlotState::pending && s.have_tx && s.have_pong && s.timing.has_followup)
    resolve(s, RdmaOutcome::answered);
}

RdmaMatch RdmaInFlight::on_tx(uint64_t seq, const CompletionStamp& stamp) {
  RdmaSlot* s = find(seq);
  // A send completion of a probe resolved meanwhile (evicted or timed out) needs no note.
  if (auto m = classify(s); m != RdmaMatch::ok) return m;
  if (s->have_tx) return RdmaMatch::duplicate;
  s->have_tx = true;
  s->timing.ping_tx = stamp;
  try_complete(*s);
  return RdmaMatch::ok;
}

RdmaMatch RdmaInFlight::on_pong(uint64_t seq, const CompletionStamp& stamp) {
  RdmaSlot* s = find(seq);
  if (auto m = classify(s); m != RdmaMatch::ok) return m;
  if (s->have_pong) return RdmaMatch::duplicate;
  s->have_pong = true;
  s->pong_mono_ns = stamp.poll_mono_ns;
  s->timing.pong_rx = stamp;
  try_complete(*s);
  return RdmaMatch::ok;
}

RdmaMatch RdmaInFlight::on_followup(uint64_t seq, int64_t delay_ns, bool hardware) {
  RdmaSlot* s = find(seq);
  if (auto m = classify(s); m != RdmaMatch::ok) {
    // The follow-up of an answered probe that was resolved without it (grace passed) is late,
    // not a duplicate: only a second follow-up is a duplicate.
    if (m == RdmaMatch::duplicate && !s->timing.has_followup) return RdmaMatch::late;
    return m;
  }
  if (s->timing.has_followup) return RdmaMatch::duplicate;
  s->timing.has_followup = true;
  s->timing.responder_delay_ns = delay_ns;
  s->timing.responder_hardware = hardware;
  try_complete(*s);
  return RdmaMatch::ok;
}

void RdmaInFlight::on_send_failed(uint64_t seq) {
  if (RdmaSlot* s = find(seq); s && s->state == RdmaSlotState::pending) resolve(*s, RdmaOutcome::lost);
}

void RdmaInFlight::sweep(int64_t now_mono_ns, int64_t followup_grace_ns) {
  if (oldest_ == 0) return;
  // Bound the walk by the ring: older seqs were overwritten (and resolved) already.
  if (next_ - oldest_ > slots_.size()) oldest_ = next_ - slots_.size();
  for (; oldest_ < next_; ++oldest_) {
    RdmaSlot& s = slots_[oldest_ & mask_];
    if (s.seq != oldest_ || s.state != RdmaSlotState::pending) continue;
    const bool answered = s.have_tx && s.have_pong;
    if (answered && now_mono_ns >= std::min(s.pong_mono_ns + followup_grace_ns, s.deadline_mono_ns)) {
      resolve(s, RdmaOutcome::answered);
    } else if (now_mono_ns >= s.deadline_mono_ns) {
      resolve(s, RdmaOutcome::lost);
    } else {
      break;  // later probes have later deadlines
    }
  }
}

}  // namespace weft::probe
