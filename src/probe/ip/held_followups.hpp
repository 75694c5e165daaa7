#pragma once
// The responder's follow-up entries held for the next reply to the same prober to carry (UDP, to
// probers that read them: wire::replies_carry_followups_ok).
//
// Why: on a mesh every pair (prober session, address it probed) is its own flow, so the follow-ups
// of one wake-up rarely share a datagram: one follow-up datagram per probe, a third datagram on
// top of probe and reply, was most of what the engine cost above the kernel floor at 1K and 10K
// probes/s (issue 17, docs/BENCHMARKS.md). Held for the pair's next reply, the send time rides in
// that reply instead. A pair probed less often than the hold gets its follow-ups at once, as
// before (holding them would only add a wake-up); what a hold could not hand on is sent on its
// own when it expires.
//
// A fixed table of pairs with open addressing (linear probing), allocated once: nothing allocates
// per packet. Pairs are never removed one by one; when the table is full the caller sends what
// every pair holds and clears it (probers come and go; the busy pairs come back at their next
// probe). `Key` needs `==`; the caller hashes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "probe/wire.hpp"

namespace weft::probe {

template <class Key>
class HeldFollowups {
 public:
  // Entries held per pair at most; the caller sends them on their own when full.
  static constexpr size_t kMaxEntries = 8;

  struct Pair {
    Key key{};
    uint64_t hash = 0;
    int64_t last_reply_mono = 0;  // the last reply to this pair (0: none yet)
    int64_t prev_reply_mono = 0;  // the one before
    int64_t held_since = 0;       // when the oldest held entry was added
    uint8_t flags = 0;            // the timestamp sources of the held entries (one set per message)
    uint8_t count = 0;
    wire::FollowupEntry entries[kMaxEntries];
  };

  explicit HeldFollowups(size_t max_pairs) : max_(max_pairs) {
    size_t slots = 16;
    while (slots < 2 * max_pairs) slots *= 2;
    index_.assign(slots, -1);
    pairs_.reserve(max_pairs);  // address space only: pages are touched as pairs arrive
  }

  // The pair for `key`, or nullptr when it is not in the table.
  Pair* find(const Key& key, uint64_t hash) {
    for (size_t i = hash & (index_.size() - 1);; i = (i + 1) & (index_.size() - 1)) {
      const int32_t at = index_[i];
      if (at < 0) return nullptr;
      Pair& p = pairs_[static_cast<size_t>(at)];
      if (p.hash == hash && p.key == key) return &p;
    }
  }

  // The pair for `key`, added if new; nullptr when the table is full (clear() it first).
  Pair* find_or_add(const Key& key, uint64_t hash) {
    size_t i = hash & (index_.size() - 1);
    for (;; i = (i + 1) & (index_.size() - 1)) {
      const int32_t at = index_[i];
      if (at < 0) break;
      Pair& p = pairs_[static_cast<size_t>(at)];
      if (p.hash == hash && p.key == key) return &p;
    }
    if (pairs_.size() == max_) return nullptr;
    index_[i] = static_cast<int32_t>(pairs_.size());
    Pair& p = pairs_.emplace_back();
    p.key = key;
    p.hash = hash;
    return &p;
  }

  // Adds an entry to `p` (which must have room and, if it holds any, the same flags).
  void hold(Pair& p, const wire::FollowupEntry& e, uint8_t flags, int64_t now_mono) {
    if (p.count == 0) {
      p.held_since = now_mono;
      p.flags = flags;
    }
    p.entries[p.count++] = e;
    ++held_;
  }

  // Moves what `p` holds into `out` (count and entries; the caller sets the rest) and empties it.
  void take(Pair& p, wire::Followups& out) {
    out.flags = p.flags;
    out.count = p.count;
    for (size_t i = 0; i < p.count; ++i) out.entries[i] = p.entries[i];
    held_ -= p.count;
    p.count = 0;
  }

  std::span<Pair> pairs() { return pairs_; }
  size_t held() const { return held_; }  // entries held over all pairs
  bool full() const { return pairs_.size() == max_; }
  // Forgets every pair; the caller has taken what they held.
  void clear() {
    pairs_.clear();
    std::fill(index_.begin(), index_.end(), -1);
    held_ = 0;
  }

 private:
  size_t max_;
  std::vector<int32_t> index_;  // open addressing: position in pairs_, -1 empty
  std::vector<Pair> pairs_;
  size_t held_ = 0;
};

}  // namespace weft::probe
