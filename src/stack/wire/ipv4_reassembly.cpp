#include "stack/wire/ipv4_reassembly.hpp"

#include <algorithm>
#include <cstring>

namespace weft::stack::wire {

// The buffer up to `end` rounded up to 1 KiB (so a datagram arriving in order grows its buffer
// a few times, not once per fragment), its bitmap, and the bookkeeping around it.
size_t Ipv4Reassembler::cost(size_t end) {
  const size_t buf = std::min<size_t>((end + 1023) & ~size_t{1023}, kIpv4MaxPacket);
  return buf + (buf / 8 + 63) / 64 * 8 + sizeof(Datagram) + 64;
}

void Ipv4Reassembler::release(List::iterator it) {
  memory_ -= it->charged;
  if (auto s = per_source_.find(it->key.src); s != per_source_.end()) {
    s->second -= it->charged;
    if (s->second == 0) per_source_.erase(s);
  }
  index_.erase(it->key);
  order_.erase(it);
}

Ipv4Reassembler::Outcome Ipv4Reassembler::feed(const Ipv4Packet& f, int64_t now_ns, Bytes& payload) {
  payload = {};
  expire(now_ns);
  const size_t off = f.frag_offset;
  const size_t len = f.payload.size();
  const size_t end = off + len;  // parse_ipv4 keeps this <= 65535
  if (end > kIpv4MaxPacket) return Outcome::dropped;
  const Key key{f.src.v, f.dst.v, f.ident, f.protocol};
  auto found = index_.find(key);
  List::iterator it = found != index_.end() ? found->second : order_.end();
  // What taking this fragment would add to the charges: refused, not made room for.
  const size_t have_cost = it != order_.end() ? it->charged : 0;
  const size_t want_cost = std::max(have_cost, cost(std::max(end, it != order_.end() ? it->max_end : 0)));
  const size_t grow = want_cost - have_cost;
  if (grow > 0) {
    const size_t src_used = per_source_.contains(key.src) ? per_source_[key.src] : 0;
    if (memory_ + grow > cfg_.memory_limit) {
      ++stats_.over_memory;
      return Outcome::dropped;
    }
    if (src_used + grow > cfg_.per_source_limit) {
      ++stats_.over_source;
      return Outcome::dropped;
    }
  }
  if (it == order_.end()) {
    order_.push_back(Datagram{});
    it = std::prev(order_.end());
    it->key = key;
    it->started_ns = now_ns;
    index_.emplace(key, it);
  }
  Datagram& d = *it;
  if (grow > 0) {
    const size_t buf = std::min<size_t>((std::max(end, d.max_end) + 1023) & ~size_t{1023}, kIpv4MaxPacket);
    d.data.resize(buf);
    d.have.resize((buf / 8 + 63) / 64, 0);
    d.charged += grow;
    memory_ += grow;
    per_source_[key.src] += grow;
  }
  auto drop = [&] {
    release(it);
    ++stats_.overlaps;
    return Outcome::dropped;
  };
  if (!f.more_fragments) {
    if (d.total_known && d.total != end) return drop();
    if (d.max_end > end) return drop();
    d.total = end;
    d.total_known = true;
  } else if (d.total_known && end > d.total) {
    return drop();
  }
  const size_t first = off / 8, last = (end + 7) / 8;  // units [first, last)
  size_t already = 0;
  for (size_t u = first; u < last; ++u) already += (d.have[u / 64] >> (u % 64)) & 1;
  if (already == last - first && len > 0) {
    ++stats_.duplicates;
    return Outcome::pending;
  }
  if (already != 0) return drop();
  for (size_t u = first; u < last; ++u) d.have[u / 64] |= uint64_t{1} << (u % 64);
  if (len > 0) std::memcpy(d.data.data() + off, f.payload.data(), len);
  d.received += len;
  d.max_end = std::max(d.max_end, end);
  if (d.total_known && d.received == d.total) {
    done_.swap(d.data);  // the bytes stay there until the next datagram completes
    payload = Bytes(done_.data(), d.total);
    release(it);
    ++stats_.completed;
    return Outcome::complete;
  }
  return Outcome::pending;
}

void Ipv4Reassembler::expire(int64_t now_ns) {
  while (!order_.empty() && now_ns - order_.front().started_ns >= cfg_.timeout_ns) {
    release(order_.begin());
    ++stats_.timeouts;
  }
}

}  // namespace weft::stack::wire
