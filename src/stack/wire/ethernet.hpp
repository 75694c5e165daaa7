#pragma once
// Ethernet II frames (no FCS: devices strip it). 802.1Q-tagged frames parse with ethertype 0x8100
// and are left to the caller (the stack does not handle VLANs).
#include "stack/wire/types.hpp"

namespace weft::stack::wire {

inline constexpr size_t kEthernetHeader = 14;

namespace ethertype {
inline constexpr uint16_t ipv4 = 0x0800;
inline constexpr uint16_t arp = 0x0806;
inline constexpr uint16_t vlan = 0x8100;
inline constexpr uint16_t ipv6 = 0x86dd;
}  // namespace ethertype

struct EthernetFrame {
  MacAddr dst;
  MacAddr src;
  uint16_t ethertype = 0;
  Bytes payload;  // points into the parsed buffer
};

// Types below 0x0600 are 802.3 lengths, not Ethernet II: unsupported.
ParseError parse_ethernet(Bytes frame, EthernetFrame& out);

// Writes the 14-byte header at the start of `out`; returns 14, or 0 if `out` is too small.
size_t emit_ethernet(MutBytes out, const MacAddr& dst, const MacAddr& src, uint16_t ethertype);

}  // namespace weft::stack::wire
