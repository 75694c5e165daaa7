#pragma once
// IPv4 reassembly (RFC 791 section 3.2, RFC 815's idea of tracking holes) into a fixed number of
// preallocated 64 KiB slots: memory does not grow with what arrives. Received ranges are kept as a
// bitmap of 8-byte units (every fragment but the last is a multiple of 8 at an offset that is one).
//
// Overlaps: a fragment whose bytes were all received already is a duplicate and ignored (the first
// copy wins); one that overlaps only in part drops the whole datagram, as Linux does since
// CVE-2018-5391, because two answers to "which bytes are right" is an attack surface. A datagram
// not complete `timeout_ns` after its first fragment is dropped (Linux: 30 s). When all slots are
// busy the oldest datagram is evicted for the new one.
#include <cstdint>
#include <vector>

#include "stack/wire/ipv4.hpp"

namespace weft::stack::wire {

class Ipv4Reassembler {
 public:
  struct Config {
    size_t slots = 4;
    int64_t timeout_ns = 30'000'000'000;
  };
  struct Stats {
    uint64_t completed = 0;
    uint64_t duplicates = 0;
    uint64_t overlaps = 0;   // datagrams dropped for a partial overlap or a conflicting end
    uint64_t timeouts = 0;   // datagrams dropped by expire()
    uint64_t evictions = 0;  // datagrams dropped to make room
  };
  enum class Outcome : uint8_t { pending, complete, dropped };

  Ipv4Reassembler() : Ipv4Reassembler(Config{}) {}
  explicit Ipv4Reassembler(Config c);

  // Feeds one fragment (`frag.is_fragment()`). On `complete`, `payload` is the reassembled upper
  // layer payload, valid until the next call to feed(); the header fields are the fragment's.
  Outcome feed(const Ipv4Packet& frag, int64_t now_ns, Bytes& payload);

  // Drops datagrams older than the timeout.
  void expire(int64_t now_ns);

  size_t in_progress() const;
  const Stats& stats() const { return stats_; }

 private:
  static constexpr size_t kUnits = (kIpv4MaxPacket + 7) / 8;
  struct Slot {
    bool used = false;
    Ipv4Addr src, dst;
    uint8_t protocol = 0;
    uint16_t ident = 0;
    int64_t started_ns = 0;
    size_t total = 0;  // payload length, known once the last fragment arrived
    bool total_known = false;
    size_t received = 0;  // bytes
    size_t max_end = 0;   // highest end offset seen
    std::vector<uint8_t> data;
    std::vector<uint64_t> have;  // one bit per 8-byte unit
  };
  Slot* find_or_take(const Ipv4Packet& frag, int64_t now_ns);
  void release(Slot& s);

  Config cfg_;
  std::vector<Slot> slots_;
  Stats stats_;
};

}  // namespace weft::stack::wire
