#include "stack/arp_cache.hpp"

namespace weft::stack {

const ArpCache::Entry* ArpCache::find(wire::Ipv4Addr ip) const {
  for (const auto& x : e_)
    if (x.used && x.ip == ip) return &x;
  return nullptr;
}

ArpCache::Entry* ArpCache::find(wire::Ipv4Addr ip) {
  return const_cast<Entry*>(static_cast<const ArpCache*>(this)->find(ip));
}

ArpCache::Entry& ArpCache::take(wire::Ipv4Addr ip, int64_t now) {
  if (Entry* x = find(ip)) return *x;
  // Free first, then entries lookup would miss before usable ones, then the oldest.
  const auto worse = [&](const Entry& a, const Entry& b) {
    if (usable(a, now) != usable(b, now)) return !usable(a, now);
    return a.learned < b.learned;
  };
  Entry* victim = &e_[0];
  for (auto& x : e_) {
    if (!x.used) {
      victim = &x;
      break;
    }
    if (worse(x, *victim)) victim = &x;
  }
  *victim = Entry{};
  victim->used = true;
  victim->ip = ip;
  return *victim;
}

bool ArpCache::usable(const Entry& x, int64_t now) const {
  return x.has_mac && now - x.learned < lifetime_ + kConfirmNs;
}

ArpLookup ArpCache::lookup(wire::Ipv4Addr ip, int64_t now, wire::MacAddr& out) const {
  const Entry* x = find(ip);
  if (!x || !usable(*x, now)) return ArpLookup::miss;
  out = x->mac;
  return now - x->learned < lifetime_ ? ArpLookup::fresh : ArpLookup::stale;
}

void ArpCache::insert(wire::Ipv4Addr ip, const wire::MacAddr& mac, int64_t now) {
  Entry& x = take(ip, now);
  x.mac = mac;
  x.has_mac = true;
  x.learned = now;
}

bool ArpCache::has(wire::Ipv4Addr ip) const {
  const Entry* x = find(ip);
  return x && x->has_mac;
}

bool ArpCache::may_request(wire::Ipv4Addr ip, int64_t now) {
  Entry& x = take(ip, now);
  if (!x.has_mac) x.learned = now;  // an unresolved entry ages like the others
  if (now - x.requested < 1'000'000'000) return false;
  x.requested = now;
  return true;
}

}  // namespace weft::stack
