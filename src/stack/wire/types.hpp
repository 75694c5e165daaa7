#pragma once
// Addresses and the parse result shared by every wire format. Standard library only: the fuzz
// targets (fuzz/, clang with libFuzzer) compile the parsers alone and link no weft library, so a
// parse gives a plain ParseError, not a Result (whose messages would bring fmt's library in). The
// compiler is not the reason: weft builds with g++ 12, and base/result.hpp works under both.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace weft::stack::wire {

using Bytes = std::span<const uint8_t>;
using MutBytes = std::span<uint8_t>;

struct MacAddr {
  std::array<uint8_t, 6> b{};
  static constexpr MacAddr broadcast() { return {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}; }
  constexpr bool is_broadcast() const { return *this == broadcast(); }
  constexpr bool is_multicast() const { return (b[0] & 1) != 0; }  // includes broadcast
  constexpr bool is_zero() const { return *this == MacAddr{}; }
  friend constexpr bool operator==(const MacAddr&, const MacAddr&) = default;
};

// IPv4 address in host byte order (so that masks and comparisons read naturally).
struct Ipv4Addr {
  uint32_t v = 0;
  static constexpr Ipv4Addr of(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    return {uint32_t{a} << 24 | uint32_t{b} << 16 | uint32_t{c} << 8 | d};
  }
  constexpr bool is_unspecified() const { return v == 0; }
  constexpr bool is_broadcast() const { return v == 0xffffffffu; }
  constexpr bool is_multicast() const { return (v >> 28) == 0xe; }
  constexpr bool is_loopback() const { return (v >> 24) == 127; }
  friend constexpr auto operator<=>(const Ipv4Addr&, const Ipv4Addr&) = default;
};

enum class ParseError : uint8_t {
  ok,
  truncated,    // shorter than its header or than a length field says
  malformed,    // a field has a value the format does not allow
  checksum,     // the checksum does not verify
  unsupported,  // well-formed but not something this stack handles (e.g. ARP for IPv6)
};

const char* to_string(ParseError e);

// How a builder fills in a checksum: all of it, only the pseudo-header sum (the device finishes
// it, virtio-net NEEDS_CSUM), or not at all (zero; IPv4 UDP only).
enum class Csum : uint8_t { full, partial, none };

}  // namespace weft::stack::wire
