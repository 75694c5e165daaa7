#pragma once
// IPv4 reassembly (RFC 791 section 3.2, RFC 815's idea of tracking holes), bounded by memory and
// time rather than by a count of slots: every datagram in progress holds a buffer as long as the
// furthest fragment seen and a bitmap of the 8-byte units received (every fragment but the last is
// a multiple of 8 at an offset that is one), and is charged for both. A new fragment that would
// take the total past `memory_limit` (Linux: net.ipv4.ipfrag_high_thresh, 4 MiB) or its source's
// share past `per_source_limit` is dropped; nothing in progress is evicted for it, so a flood of
// bogus first fragments cannot push a real datagram out (with 4 slots and the oldest evicted, 10
// of them between the pieces of a real datagram kept it from ever completing). A datagram not
// complete `timeout_ns` after its first fragment is dropped (Linux: ipfrag_time, 30 s). The per-
// source share is this stack's addition (Linux has none): one sender that does not spoof its
// address cannot take the whole budget from the others.
//
// Overlaps: a fragment whose bytes were all received already is a duplicate and ignored (the first
// copy wins); one that overlaps only in part drops the whole datagram, as Linux does since
// CVE-2018-5391, because two answers to "which bytes are right" is an attack surface.
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "stack/wire/ipv4.hpp"

namespace weft::stack::wire {

class Ipv4Reassembler {
 public:
  struct Config {
    size_t memory_limit = 4 << 20;      // bytes, all datagrams in progress together
    size_t per_source_limit = 1 << 20;  // bytes, the datagrams from one source address
    int64_t timeout_ns = 30'000'000'000;
  };
  struct Stats {
    uint64_t completed = 0;
    uint64_t duplicates = 0;
    uint64_t overlaps = 0;     // datagrams dropped for a partial overlap or a conflicting end
    uint64_t timeouts = 0;     // datagrams dropped by expire()
    uint64_t over_memory = 0;  // fragments dropped: the memory limit was reached
    uint64_t over_source = 0;  // fragments dropped: their source's share was reached
  };
  enum class Outcome : uint8_t { pending, complete, dropped };

  Ipv4Reassembler() : Ipv4Reassembler(Config{}) {}
  explicit Ipv4Reassembler(Config c) : cfg_(c) {}

  // Feeds one fragment (`frag.is_fragment()`). On `complete`, `payload` is the reassembled upper
  // layer payload, valid until the next call to feed(); the header fields are the fragment's.
  Outcome feed(const Ipv4Packet& frag, int64_t now_ns, Bytes& payload);

  // Drops datagrams older than the timeout.
  void expire(int64_t now_ns);

  size_t in_progress() const { return index_.size(); }
  size_t memory() const { return memory_; }  // bytes charged to the datagrams in progress
  const Stats& stats() const { return stats_; }

 private:
  struct Key {
    uint32_t src, dst;
    uint16_t ident;
    uint8_t protocol;
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      uint64_t x = (uint64_t{k.src} << 32 | k.dst) * 0x9e3779b97f4a7c15ULL;
      x ^= (uint64_t{k.ident} << 8 | k.protocol) * 0xc2b2ae3d27d4eb4fULL;
      return static_cast<size_t>(x ^ (x >> 29));
    }
  };
  struct Datagram {
    Key key;
    int64_t started_ns = 0;
    size_t total = 0;  // payload length, known once the last fragment arrived
    bool total_known = false;
    size_t received = 0;  // bytes
    size_t max_end = 0;   // highest end offset seen
    size_t charged = 0;   // bytes counted against the limits
    std::vector<uint8_t> data;
    std::vector<uint64_t> have;  // one bit per 8-byte unit
  };
  using List = std::list<Datagram>;  // oldest first: expiry looks at the front only
  static size_t cost(size_t end);    // what a datagram whose buffer reaches `end` is charged
  void release(List::iterator it);

  Config cfg_;
  List order_;
  std::unordered_map<Key, List::iterator, KeyHash> index_;
  std::unordered_map<uint32_t, size_t> per_source_;  // bytes charged per source address
  size_t memory_ = 0;
  std::vector<uint8_t> done_;  // the last completed datagram, which `payload` points into
  Stats stats_;
};

}  // namespace weft::stack::wire
