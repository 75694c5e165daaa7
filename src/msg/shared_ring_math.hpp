#pragma once
// The arithmetic of the shared ring (kind shared-ring: N senders, one receiver, one ring), pure so
// it is unit-tested on the host. The protocol (shared_ring.hpp has the whole story):
//
//  - a sender reserves reserved_bytes(len) of the ring with FETCH_AND_ADD on the receiver's
//    reservation counter, then WRITE_WITH_IMMs its message at the reserved place (imm = offset);
//  - the receiver delivers in reservation order: the message that starts at its tail, whatever
//    sender wrote it and whenever its completion came;
//  - before each FAA a sender WRITEs an announcement word into its own control block at the
//    receiver ({sequence, start unknown}); RC executes the two in order, so by the time a
//    reservation exists its owner's announcement is visible. A sender that must wait for ring
//    space announces again with the start it got. The receiver uses the announcements to decide,
//    when the message at its tail is missing, whether a live sender may still write it (wait) or
//    only senders that are gone can own it (skip the hole): judge_hole below.
#include <cstdint>
#include <optional>
#include <span>

namespace weft::msg {

// Every reservation is a multiple of 8 bytes and at least 8, so two reservations never start at
// the same place (a zero-length message still takes a place in the order) and a start fits the
// announcement word as start / 8.
inline uint64_t reserved_bytes(uint64_t len) { return len == 0 ? 8 : (len + 7) & ~uint64_t{7}; }

// The counter in [from, from + size) whose offset in the ring is `offset` (offset < size).
inline uint64_t counter_at(uint64_t from, uint64_t offset, uint64_t size) {
  return from + (offset + size - from % size) % size;
}

// Announcement word: sequence (the sender's message count + 1, mod 2^16) in the top 16 bits,
// start / 8 (mod 2^48: 2 PiB of reservations) below, all ones when not known yet.
inline constexpr uint64_t kStartUnknown = (uint64_t{1} << 48) - 1;
inline uint64_t announce_word(uint64_t seq, std::optional<uint64_t> start) {
  return ((seq & 0xffff) << 48) | (start ? (*start / 8) & kStartUnknown : kStartUnknown);
}

// What the receiver knows about one sender when it judges a hole.
struct SenderView {
  bool gone = false;      // side channel closed or QP failed; its QP is fenced and drained
  uint64_t arrived = 0;   // its messages that arrived (their receive completions were taken)
  uint64_t announce = 0;  // its announcement word (0 before its first message)
};

struct HoleVerdict {
  bool skip = false;  // true: [tail, to) belongs to gone senders only; skip it
  uint64_t to = 0;
  int waiting_for = -1;  // not skipping because of this live sender (-1: nothing is missing)
};

// The message at `tail` has not arrived. `reserved` is the reservation counter read BEFORE the
// arrivals were taken and the announcements read; next_arrived the smallest start of an arrived,
// undelivered message (all are > tail). A live sender may own `tail` unless it has nothing in
// flight (announce sequence == arrived) or it announced a start other than tail; if none may,
// every reservation in [tail, limit) was made by a sender that is gone, where limit is the
// first place something live or arrived may start.
HoleVerdict judge_hole(uint64_t tail, uint64_t reserved, std::optional<uint64_t> next_arrived,
                       std::span<const SenderView> senders);

}  // namespace weft::msg
