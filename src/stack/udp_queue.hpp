#pragma once
// A UDP socket's receive queue: datagrams packed into one byte ring (an 8-byte record header of
// source address, port and length, then the payload), so a burst of small datagrams does not
// cost a fixed slot each and nothing is allocated per datagram. A datagram that does not fit
// is dropped and counted, as a full socket buffer drops in the kernel.
#include <cstdint>
#include <cstring>

#include "stack/tcp/ring.hpp"
#include "stack/wire/types.hpp"

namespace weft::stack {

struct DatagramInfo {
  wire::Ipv4Addr src;
  uint16_t src_port = 0;
  size_t len = 0;          // the datagram's full length
  bool truncated = false;  // the buffer given was shorter: the rest was dropped
};

class UdpQueue {
 public:
  explicit UdpQueue(size_t capacity) : ring_(capacity) {}

  bool empty() const { return ring_.size() == 0; }
  uint64_t dropped() const { return dropped_; }

  bool push(wire::Ipv4Addr src, uint16_t port, wire::Bytes payload) {
    if (kHeader + payload.size() > ring_.free()) {
      ++dropped_;
      return false;
    }
    uint8_t h[kHeader];
    std::memcpy(h, &src.v, 4);
    std::memcpy(h + 4, &port, 2);
    const auto len = static_cast<uint16_t>(payload.size());
    std::memcpy(h + 6, &len, 2);
    ring_.push(wire::Bytes(h, kHeader));
    ring_.push(payload);
    return true;
  }

  // The oldest datagram into `out`; false when there is none. With `keep` (MSG_PEEK) it stays
  // queued, and the next call reads it again.
  bool pop(wire::MutBytes out, DatagramInfo& info, bool keep = false) {
    if (empty()) return false;
    uint8_t h[kHeader];
    copy_out(0, wire::MutBytes(h, kHeader));
    uint16_t len = 0;
    std::memcpy(&info.src.v, h, 4);
    std::memcpy(&info.src_port, h + 4, 2);
    std::memcpy(&len, h + 6, 2);
    info.len = len;
    const size_t n = std::min<size_t>(len, out.size());
    copy_out(kHeader, out.first(n));
    info.truncated = n < len;
    if (!keep) ring_.consume(kHeader + len);
    return true;
  }

 private:
  static constexpr size_t kHeader = 8;
  tcp::ByteRing ring_;
  uint64_t dropped_ = 0;

  void copy_out(size_t offset, wire::MutBytes out) const {
    const auto [a, b] = ring_.peek(offset, out.size());
    if (!a.empty()) std::memcpy(out.data(), a.data(), a.size());
    if (!b.empty()) std::memcpy(out.data() + a.size(), b.data(), b.size());
  }
};

}  // namespace weft::stack
