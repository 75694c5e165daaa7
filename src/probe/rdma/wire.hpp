#pragma once
// The RDMA probe wire format: one fixed-size 64-byte UD message, network byte order.
//
//   0  magic u32 "WFRD"   4 version u8 (1)   5 type u8   6 flags u8   7 reserved u8 (0)
//   8  session u64        16 seq u64
//   24 gid[16]            40 lid u16          42 reserved u16 (0)     44 qkey u32
//   48 delay_ns i64       56 reserved u64 (0)
//
// Types:
//   ping      prober -> responder. Carries the prober's own address (GID and/or LID, and the
//             qkey its QP expects) so that the responder can build the reply's address handle
//             without reading the GRH or sysfs on the packet path. Flag kGlobal: reply with a GRH
//             to `gid` (RoCE, or InfiniBand across subnets); without it, route by `lid`.
//   pong      responder -> prober, as soon as the ping was received. No times: the responder does
//             not yet know when its pong actually left.
//   followup  responder -> prober, after the pong's send completion: delay_ns = pong send
//             completion - ping receive completion, on the responder's clock. Flag kHardware: both
//             stamps were NIC completion timestamps (else software stamps taken when polled).
// Pong and follow-up may arrive in either order (the prober matches both by session and seq).
// The parser is strict: size, magic, version, type, flags, reserved bytes and every field that
// must be zero for the type are checked (and fuzzed). Standard library only, so fuzzers build it
// alone.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace weft::probe::rdma_wire {

inline constexpr uint32_t kMagic = 0x57465244;  // "WFRD"
inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kSize = 64;

enum class Type : uint8_t { ping = 1, pong = 2, followup = 3 };

inline constexpr uint8_t kGlobal = 0x01;    // ping: reply with a GRH to gid
inline constexpr uint8_t kHardware = 0x02;  // followup: delay from NIC completion timestamps

struct Message {
  Type type = Type::ping;
  uint8_t flags = 0;
  uint64_t session = 0;
  uint64_t seq = 0;
  std::array<uint8_t, 16> gid{};  // ping only
  uint16_t lid = 0;               // ping only
  uint32_t qkey = 0;              // ping only
  int64_t delay_ns = 0;           // followup only
};

enum class ParseError : uint8_t {
  ok,
  size,  // not exactly kSize bytes
  magic,
  version,
  type,
  flags,     // unknown flag bits, or a flag that makes no sense for the type
  reserved,  // a reserved field is not zero
  session,   // session 0
  seq,       // sequence 0
  address,   // ping without a usable reply address, or an address in a pong/follow-up
  delay,     // follow-up delay negative, or a delay in a ping/pong
};

const char* to_string(ParseError e);

void encode(const Message& m, std::span<uint8_t, kSize> out);
ParseError decode(std::span<const uint8_t> in, Message& out);

}  // namespace weft::probe::rdma_wire
