#pragma once
// The ARP cache (RFC 826): a fixed table of IPv4 -> MAC entries that expire, plus when a request
// for an address was last sent (at most one a second per address, as smoltcp and Linux do).
#include <array>
#include <cstdint>

#include "stack/wire/types.hpp"

namespace weft::stack {

class ArpCache {
 public:
  static constexpr size_t kEntries = 64;
  explicit ArpCache(int64_t lifetime_ns = 60'000'000'000) : lifetime_(lifetime_ns) {}

  // The MAC for `ip` if known and fresh.
  bool lookup(wire::Ipv4Addr ip, int64_t now, wire::MacAddr& out) const;
  // Learns or refreshes; evicts the oldest entry when full.
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
  Entry& take(wire::Ipv4Addr ip);

  int64_t lifetime_;
  std::array<Entry, kEntries> e_{};
};

}  // namespace weft::stack
