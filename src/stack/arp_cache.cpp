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

ArpCache::Entry& ArpCache::take(wire::Ipv4Addr ip) {
  if (Entry* x = find(ip)) return *x;
  Entry* victim = &e_[0];
  for (auto& x : e_) {
    if (!x.used) {
      victim = &x;
      break;
    }
    if (x.learned < victim->learned) victim = &x;
  }
  *victim = Entry{};
  victim->used = true;
  victim->ip = ip;
  return *victim;
}

bool ArpCache::lookup(wire::Ipv4Addr ip, int64_t now, wire::MacAddr& out) const {
  const Entry* x = find(ip);
  if (!x || !x->has_mac || now - x->learned >= lifetime_) return false;
  out = x->mac;
  return true;
}

void ArpCache::insert(wire::Ipv4Addr ip, const wire::MacAddr& mac, int64_t now) {
  Entry& x = take(ip);
  x.mac = mac;
  x.has_mac = true;
  x.learned = now;
}

bool ArpCache::has(wire::Ipv4Addr ip) const {
  const Entry* x = find(ip);
  return x && x->has_mac;
}

bool ArpCache::may_request(wire::Ipv4Addr ip, int64_t now) {
  Entry& x = take(ip);
  if (!x.has_mac) x.learned = now;  // an unresolved entry ages like the others
  if (now - x.requested < 1'000'000'000) return false;
  x.requested = now;
  return true;
}

}  // namespace weft::stack
