#pragma once
// The probe wire format: one fixed-size 48-byte message, network byte order, used for UDP
// datagrams and for frames on kept-open TCP connections.
//
//   0  magic u32 "WFPB"     4 version u8 (1)   5 type u8   6 flags u8   7 reserved u8 (0)
//   8  session u64          16 seq u64
//   24 prober_tx_ns i64     32 responder_rx_ns i64        40 responder_tx_ns i64
//
// Types: probe (prober -> responder), reply (responder -> prober, carries the responder's kernel
// receive time and its user-space send time), follow-up (responder -> prober, the responder's
// kernel send time of that reply, PTP "two-step" style; announced by a flag in the reply; on
// kept-open TCP only to probers that said they read them, see stream_followups_ok). The parser is
// strict: any size, magic, version, type, flag or field that is not exactly as specified is rejected (and
// fuzzed).
//
// Follow-ups (type 4), the one variable-size message: the kernel send times of up to 40 replies
// to one session in one datagram, so a busy responder sends one follow-up datagram per prober
// per wake-up instead of one per probe (a third datagram per probe was a third of the cost):
//
//   0  magic u32   4 version u8 (1)   5 type u8 (4)   6 flags u8   7 count u8 (1..40)
//   8  session u64
//   16 count x { seq u64, responder_rx_ns i64, responder_tx_ns i64 }   (24 bytes each)
//
// `flags` (timestamp sources, as in a single follow-up) hold for every entry.
//
// A reply that carries follow-ups (UDP, only to probers that say they read it, see
// replies_carry_followups_ok): a 48-byte reply immediately followed, in the same datagram, by a
// follow-ups message for the same session with the send times of earlier replies to that prober
// from the same address. On a busy pair the stamps then ride on the next reply instead of a third
// datagram per probe (issue 17). The reply part is exactly a reply; `decode` still takes only 48
// bytes, so a prober from before this never takes such a datagram for anything.
// This header has no dependencies beyond the standard library so that fuzzers build it alone.
#include <cstddef>
#include <cstdint>
#include <span>

namespace weft::probe::wire {

inline constexpr uint32_t kMagic = 0x57465042;  // "WFPB"
inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kSize = 48;

enum class Type : uint8_t { probe = 1, reply = 2, followup = 3, followups = 4 };

// Where the responder's times came from.
inline constexpr uint8_t kRxKernel = 0x01;        // responder_rx_ns is a kernel software timestamp
inline constexpr uint8_t kRxHardware = 0x02;      // ... a NIC hardware timestamp
inline constexpr uint8_t kTxKernel = 0x04;        // responder_tx_ns is a kernel software timestamp
inline constexpr uint8_t kTxHardware = 0x08;      // ... a NIC hardware timestamp
inline constexpr uint8_t kFollowupComing = 0x10;  // reply: a follow-up with kernel times follows
inline constexpr uint8_t kKnownFlags = 0x1f;

// Kept-open TCP: a responder may send a follow-up frame (type 3) on the stream after a reply
// flagged kFollowupComing, but a prober from before that treats any frame but a reply as garbage
// and drops the connection, and a probe has no room for a flag (older responders reject any). So
// the lowest bit of the session says it: every older prober set it (its sessions are odd); a
// prober that reads follow-up frames on its streams uses even sessions. On UDP it means nothing.
inline constexpr uint64_t kSessionNoStreamFollowups = 1;
inline constexpr bool stream_followups_ok(uint64_t session) {
  return (session & kSessionNoStreamFollowups) == 0;
}

// UDP: a responder may send replies that carry follow-ups (above) only to a prober that reads them,
// and a probe has no room for a flag (older responders reject any). So the session says it: its
// upper 32 bits are kSessionCarryTag. A prober that does not want them makes sure its session's
// are not; an older prober's random session has them by chance with probability 2^-32.
inline constexpr uint64_t kSessionCarryMask = 0xffff'ffff'0000'0000ULL;
inline constexpr uint64_t kSessionCarryTag = 0x5746'4331'0000'0000ULL;  // "WFC1"
inline constexpr bool replies_carry_followups_ok(uint64_t session) {
  return (session & kSessionCarryMask) == kSessionCarryTag;
}
// How long a responder holds a reply's send time for a later reply to the same prober to carry
// before it sends it on its own; a prober that reads carried follow-ups waits this much longer for
// them. It only delays the result (a probe is counted in the window of its deadline, 1 s after
// its send by default), never the times in it.
inline constexpr int64_t kCarryHoldNs = 125'000'000;

struct Packet {
  Type type = Type::probe;
  uint8_t flags = 0;
  uint64_t session = 0;
  uint64_t seq = 0;
  int64_t prober_tx_ns = 0;
  int64_t responder_rx_ns = 0;
  int64_t responder_tx_ns = 0;
};

enum class ParseError : uint8_t {
  ok,
  size,  // not exactly kSize bytes
  magic,
  version,
  type,
  flags,     // unknown flag bits, or flags that make no sense for the type
  reserved,  // reserved byte not zero
  session,   // session 0
  seq,       // sequence 0
  times,     // a time that must be set is not, or must not be set is, or is negative
};

const char* to_string(ParseError e);

void encode(const Packet& p, std::span<uint8_t, kSize> out);
ParseError decode(std::span<const uint8_t> in, Packet& out);

// --- follow-ups (type 4) ---
inline constexpr size_t kFollowupsHeader = 16;
inline constexpr size_t kFollowupsEntry = 24;
inline constexpr size_t kMaxFollowups = 40;
inline constexpr size_t kMaxFollowupsSize = kFollowupsHeader + kMaxFollowups * kFollowupsEntry;  // 976

struct FollowupEntry {
  uint64_t seq = 0;
  int64_t responder_rx_ns = 0;
  int64_t responder_tx_ns = 0;
};

struct Followups {
  uint8_t flags = 0;
  uint8_t count = 0;
  uint64_t session = 0;
  FollowupEntry entries[kMaxFollowups];
};

// True when `in` claims to be a follow-ups message (magic and type); decode_followups decides
// whether it is a valid one. Lets a reader pick the parser without parsing twice.
bool is_followups(std::span<const uint8_t> in);
// Writes kFollowupsHeader + count * kFollowupsEntry bytes (count must be 1..kMaxFollowups and
// `out` large enough); returns the size written.
size_t encode_followups(const Followups& f, std::span<uint8_t> out);
ParseError decode_followups(std::span<const uint8_t> in, Followups& out);

// --- a reply carrying follow-ups ---
inline constexpr size_t kMaxReplyFollowupsSize = kSize + kMaxFollowupsSize;  // 1,024
// True when `in` is longer than one packet and starts like a reply: decode_reply_followups decides.
bool is_reply_followups(std::span<const uint8_t> in);
// Writes the reply `p` and then `f` (f.session must be p.session, f.count 1..kMaxFollowups);
// returns the size written, 0 when that cannot be done.
size_t encode_reply_followups(const Packet& p, const Followups& f, std::span<uint8_t> out);
// Both parts must be valid, the first a reply, and the sessions equal (else ParseError::session).
// Nothing is written to `p` or `f` unless the whole datagram is valid.
ParseError decode_reply_followups(std::span<const uint8_t> in, Packet& p, Followups& f);

}  // namespace weft::probe::wire
