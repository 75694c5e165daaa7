#pragma once
// The ARP cache (RFC 826): a fixed table of IPv4 -> MAC entries, plus when a request for an
// address was last sent (at most one a second per address, as smoltcp and Linux do).
//
// An entry is fresh for its lifetime after it was learned; then, like Linux's STALE/PROBE
// states, it is still used for kConfirmNs while unicast requests confirm it, so a connection
// that keeps talking to one neighbour never waits for a broadcast every lifetime. Unresolved
// entries (requests nobody answered: a SYN flood's spoofed sources) give way before resolved
// ones, so they never push a neighbour that answers out of the table.
#include <array>
#include <cstdint>

#include "stack/wire/types.hpp"

namespace weft::stack {

enum class ArpLookup {
  miss,   // unknown, unresolved or past confirming: park the frame and broadcast a request
  fresh,  // use the MAC
  stale,  // use the MAC and confirm it with a unicast request (may_request rate-limits those)
};

class ArpCache {
 public:
  static constexpr size_t kEntries = 64;
  static constexpr int64_t kConfirmNs = 3'000'000'000;  // Linux: 3 unicast probes, 1 s apart
  explicit ArpCache(int64_t lifetime_ns = 60'000'000'000) : lifetime_(lifetime_ns) {}

  // What is known of `ip`; `out` is set unless the answer is miss.
  ArpLookup lookup(wire::Ipv4Addr ip, int64_t now, wire::MacAddr& out) const;
  // Learns or refreshes; when full, evicts the oldest entry that cannot be used, else the oldest.
  void insert(wire::Ipv4Addr ip, const wire::MacAddr& mac, int64_t now);
  // Whether an entry (fresh or not) exists: RFC 826 updates those from any ARP packet.
  bool has(wire::Ipv4Addr ip) const;
  // True if a request for `ip` may go out now (and notes that it does).
  bool may_request(wire::Ipv4Addr ip, int64_t now);

 private:
  struct Entry {
    wire::Ipv4Addr ip;
    wire::MacAddr mac;
    int64_t learned = 0;
    int64_t requested = -1'000'000'000'000;
    bool has_mac = false;
    bool used = false;
  };
  Entry* find(wire::Ipv4Addr ip);
  const Entry* find(wire::Ipv4Addr ip) const;
  Entry& take(wire::Ipv4Addr ip, int64_t now);
  // Has a MAC not past confirming: what lookup answers fresh or stale for.
  bool usable(const Entry& x, int64_t now) const;

  int64_t lifetime_;
  std::array<Entry, kEntries> e_{};
};

}  // namespace weft::stack
