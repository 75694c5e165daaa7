#include "stack/tcp/time_wait.hpp"

namespace weft::stack::tcp {

namespace {
using namespace wire::tcpflag;
}  // namespace

bool time_wait_takes_syn(const wire::TcpSegment& s, uint32_t rcv_nxt, bool ts_on, uint32_t ts_recent) {
  const uint8_t f = s.h.flags;
  if (!(f & syn) || (f & (ack | rst))) return false;
  const wire::TcpOptions& o = s.h.options;
  const bool ts = ts_on && o.has_timestamps;
  if (ts && seq_lt(o.ts_val, ts_recent)) return false;  // PAWS: an old duplicate
  return (ts && seq_gt(o.ts_val, ts_recent)) || seq_gt(s.h.seq, rcv_nxt);
}

bool TimeWaitTable::add(const FourTuple& t, const TimeWaitEntry& e, int64_t now) {
  expire(now);
  if (waits_.size() >= cap_) return false;
  waits_[t] = e;
  order_.push_back({e.until, t});
  return true;
}

TimeWaitTable::Verdict TimeWaitTable::input(const FourTuple& t, const wire::TcpSegment& s, int64_t now,
                                            bool may_reopen, wire::TcpHeader& ack_out, uint32_t& iss) {
  auto it = waits_.find(t);
  if (it == waits_.end()) return Verdict::absent;
  TimeWaitEntry& e = it->second;
  if (e.until <= now) {  // over, not yet expired
    waits_.erase(it);
    return Verdict::absent;
  }
  const uint8_t f = s.h.flags;
  const wire::TcpOptions& o = s.h.options;
  const bool ts = e.ts_on && o.has_timestamps;
  if (f & rst) {
    if (s.h.seq == e.rcv_nxt) waits_.erase(it);
    return Verdict::dropped;
  }
  const bool paws_reject = ts && seq_lt(o.ts_val, e.ts_recent);
  if (may_reopen && time_wait_takes_syn(s, e.rcv_nxt, e.ts_on, e.ts_recent)) {
    iss = time_wait_next_iss(e.snd_nxt);
    waits_.erase(it);
    return Verdict::reopen;
  }
  if (!paws_reject && s.seg_len() == 0 && s.h.seq == e.rcv_nxt && (f & ack)) return Verdict::dropped;
  if (f & fin) e.until = now + wait_ns_;
  ack_out = {};
  ack_out.src_port = t.local_port;
  ack_out.dst_port = t.remote_port;
  ack_out.seq = e.snd_nxt;
  ack_out.ack = e.rcv_nxt;
  ack_out.flags = ack;
  ack_out.window = e.window;
  if (e.ts_on) {
    ack_out.options.has_timestamps = true;
    ack_out.options.ts_val = static_cast<uint32_t>(now / kMs) + e.ts_offset;
    ack_out.options.ts_ecr = e.ts_recent;
  }
  return Verdict::ack;
}

void TimeWaitTable::expire(int64_t now) {
  while (!order_.empty() && order_.front().until <= now) {
    const Due d = order_.front();
    order_.pop_front();
    auto it = waits_.find(d.t);
    if (it == waits_.end()) continue;  // ended early (an RST, a new incarnation)
    if (it->second.until <= now) {
      waits_.erase(it);
    } else if (it->second.until != d.until) {
      order_.push_back({it->second.until, d.t});  // restarted, or a later wait of the same 4-tuple
    }
  }
}

bool TimeWaitTable::contains(const FourTuple& t, int64_t now) const {
  auto it = waits_.find(t);
  return it != waits_.end() && it->second.until > now;
}

}  // namespace weft::stack::tcp
