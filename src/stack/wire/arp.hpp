#pragma once
// ARP (RFC 826) for IPv4 over Ethernet, the only combination the stack resolves: any other
// hardware/protocol type or address length is `unsupported`.
#include "stack/wire/types.hpp"

namespace weft::stack::wire {

inline constexpr size_t kArpSize = 28;

enum class ArpOp : uint16_t { request = 1, reply = 2 };

struct ArpPacket {
  ArpOp op = ArpOp::request;
  MacAddr sender_mac;
  Ipv4Addr sender_ip;
  MacAddr target_mac;
  Ipv4Addr target_ip;
  friend bool operator==(const ArpPacket&, const ArpPacket&) = default;
};

// Bytes after the 28 (Ethernet padding) are ignored. Operations other than 1 and 2 (RARP,
// InARP) are unsupported.
ParseError parse_arp(Bytes data, ArpPacket& out);

// Returns 28, or 0 if `out` is too small.
size_t emit_arp(MutBytes out, const ArpPacket& p);

}  // namespace weft::stack::wire
