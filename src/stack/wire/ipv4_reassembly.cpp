#include "stack/wire/ipv4_reassembly.hpp"

#include <algorithm>
#include <cstring>

namespace weft::stack::wire {

Ipv4Reassembler::Ipv4Reassembler(Config c) : cfg_(c), slots_(std::max<size_t>(c.slots, 1)) {
  for (auto& s : slots_) {
    s.data.resize(kIpv4MaxPacket);
    s.have.resize((kUnits + 63) / 64);
  }
}

void Ipv4Reassembler::release(Slot& s) {
  s.used = false;
  std::fill(s.have.begin(), s.have.end(), 0);
}

Ipv4Reassembler::Slot* Ipv4Reassembler::find_or_take(const Ipv4Packet& f, int64_t now_ns) {
  Slot* free_slot = nullptr;
  Slot* oldest = nullptr;
  for (auto& s : slots_) {
    if (!s.used) {
      if (!free_slot) free_slot = &s;
      continue;
    }
    if (s.src == f.src && s.dst == f.dst && s.protocol == f.protocol && s.ident == f.ident) return &s;
    if (!oldest || s.started_ns < oldest->started_ns) oldest = &s;
  }
  Slot* s = free_slot;
  if (!s) {
    s = oldest;
    release(*s);
    ++stats_.evictions;
  }
  s->used = true;
  s->src = f.src;
  s->dst = f.dst;
  s->protocol = f.protocol;
  s->ident = f.ident;
  s->started_ns = now_ns;
  s->total = 0;
  s->total_known = false;
  s->received = 0;
  s->max_end = 0;
  return s;
}

Ipv4Reassembler::Outcome Ipv4Reassembler::feed(const Ipv4Packet& f, int64_t now_ns, Bytes& payload) {
  payload = {};
  expire(now_ns);
  const size_t off = f.frag_offset;
  const size_t len = f.payload.size();
  const size_t end = off + len;  // parse_ipv4 keeps this <= 65535
  if (end > kIpv4MaxPacket) return Outcome::dropped;
  Slot& s = *find_or_take(f, now_ns);
  auto drop = [&] {
    release(s);
    ++stats_.overlaps;
    return Outcome::dropped;
  };
  if (!f.more_fragments) {
    if (s.total_known && s.total != end) return drop();
    if (s.max_end > end) return drop();
    s.total = end;
    s.total_known = true;
  } else if (s.total_known && end > s.total) {
    return drop();
  }
  const size_t first = off / 8, last = (end + 7) / 8;  // units [first, last)
  size_t already = 0;
  for (size_t u = first; u < last; ++u) already += (s.have[u / 64] >> (u % 64)) & 1;
  if (already == last - first && len > 0) {
    ++stats_.duplicates;
    return Outcome::pending;
  }
  if (already != 0) return drop();
  for (size_t u = first; u < last; ++u) s.have[u / 64] |= uint64_t{1} << (u % 64);
  if (len > 0) std::memcpy(s.data.data() + off, f.payload.data(), len);
  s.received += len;
  s.max_end = std::max(s.max_end, end);
  if (s.total_known && s.received == s.total) {
    payload = Bytes(s.data.data(), s.total);
    release(s);  // the bytes stay in place until this slot is taken again
    ++stats_.completed;
    return Outcome::complete;
  }
  return Outcome::pending;
}

void Ipv4Reassembler::expire(int64_t now_ns) {
  for (auto& s : slots_)
    if (s.used && now_ns - s.started_ns >= cfg_.timeout_ns) {
      release(s);
      ++stats_.timeouts;
    }
}

size_t Ipv4Reassembler::in_progress() const {
  return static_cast<size_t>(
      std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.used; }));
}

}  // namespace weft::stack::wire
