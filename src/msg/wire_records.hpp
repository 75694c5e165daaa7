#pragma once
// The byte layouts of the two records a message connection parses from its peer: the hello
// exchanged at set-up (hello.hpp wraps it) and the read-pull notice (read_notice.hpp). Plain
// structs and error codes, no Result and no verbs: the fuzzer (fuzz/msg_wire_fuzz.cpp) compiles
// this file alone and links nothing, where a Result would bring fmt's library in with its
// messages (the wrappers make those). The compiler is not the reason: weft builds with g++ 12,
// the fuzzers with clang and libFuzzer, and base/result.hpp works under both (a stand-in,
// expected_lite.hpp, where the library has no usable <expected>), as the report fuzzer shows.
#include <cstddef>
#include <cstdint>
#include <span>

namespace weft::msg::wire {

enum class ParseError { ok, size, magic, version, kind, qpn, reserved, sequence, offset, length, slots };
const char* describe(ParseError e);

struct Buf {
  uint64_t addr = 0;
  uint32_t rkey = 0;
  uint32_t length = 0;
};

inline constexpr uint32_t kHelloMagic = 0x534d4657;  // "WFMS" little-endian
inline constexpr uint16_t kHelloVersion = 1;
inline constexpr size_t kHelloSize = 112;
inline constexpr uint8_t kMaxKind = 8;  // kinds are 1..kMaxKind (kind.hpp)

struct HelloFields {
  uint8_t kind = 0;
  uint32_t max_message = 0;
  uint32_t slots = 0;
  uint64_t ring_bytes = 0;
  uint32_t qpn = 0, psn = 0;
  uint16_t lid = 0;
  uint8_t gid[16]{};
  Buf inbox, outbox, ctrl;
};

void encode_hello(const HelloFields& h, std::span<std::byte, kHelloSize> out);
ParseError decode_hello(std::span<const std::byte> in, HelloFields& h);

inline constexpr size_t kNoticeSize = 16;

struct NoticeFields {
  uint32_t seq = 0;
  uint32_t length = 0;
  uint64_t offset = 0;
};

void encode_notice(const NoticeFields& n, std::span<std::byte, kNoticeSize> out);
ParseError decode_notice(std::span<const std::byte> in, NoticeFields& n);
// Is n the notice for message `seq` in a send area of `slots` slots of `slot_bytes`?
ParseError check_notice(const NoticeFields& n, uint64_t seq, uint32_t slots, uint32_t slot_bytes);

}  // namespace weft::msg::wire
