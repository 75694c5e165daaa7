#pragma once
// A model of the shared ring's senders and receiver (msg/shared_ring.hpp) that follows the real
// protocol step by step on shared_ring_math.hpp, for the unit test (random schedules) and the
// fuzzer (schedules from the input). Each sender step is one thing the real sender does: announce
// + FETCH_AND_ADD (one post list), announce its start while it waits for space, or WRITE its
// message; a sender may die (stop for good) or simply not be scheduled (a stall) anywhere. The
// receiver delivers the message at its tail or judges the hole. check_* report the first broken
// rule as text (empty: fine), so both drivers fail with the reason.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "msg/shared_ring_math.hpp"

namespace weft::msg::sim {

class SharedRingSim {
 public:
  SharedRingSim(unsigned senders, uint64_t ring, uint64_t per_sender)
      : s_(senders), ring_(ring), per_(per_sender) {}

  // Sender i does its next step with a message of len bytes (used when it reserves).
  void sender_step(unsigned i, uint64_t len) {
    Sender& x = s_[i];
    if (x.gone || x.sent == per_) return;
    if (!x.reserved) {
      x.announce = announce_word(x.sent + 1, std::nullopt);
      x.len = len;
      x.start = counter_;
      counter_ += reserved_bytes(len);
      owner_[x.start] = {i, x.sent};
      x.reserved = true;
      x.announced_start = false;
    } else if (x.start + reserved_bytes(x.len) - tail_ <= ring_) {  // fits: head == tail here
      arrived_[x.start] = {i, x.sent, x.len};
      ++x.arrived;
      ++x.sent;
      x.reserved = false;
    } else if (!x.announced_start) {
      x.announce = announce_word(x.sent + 1, x.start);
      x.announced_start = true;
    }
  }
  void die(unsigned i) { s_[i].gone = true; }

  // The receiver's step; returns the broken rule, if any.
  std::string receiver_step() {
    if (auto it = arrived_.find(tail_); it != arrived_.end()) {
      Sender& x = s_[it->second.sender];
      if (it->second.index != x.delivered) return "delivered out of its sender's order";
      ++x.delivered;
      tail_ += reserved_bytes(it->second.len);
      arrived_.erase(it);
      return {};
    }
    std::vector<SenderView> views;
    for (auto& x : s_) views.push_back({x.gone, x.arrived, x.announce});
    auto next = arrived_.empty() ? std::nullopt : std::optional<uint64_t>(arrived_.begin()->first);
    const HoleVerdict v = judge_hole(tail_, counter_, next, views);
    if (!v.skip) return {};
    if (v.to <= tail_ || v.to > counter_) return "a skip outside the reserved range";
    for (auto it = owner_.lower_bound(tail_); it != owner_.end() && it->first < v.to; ++it) {
      if (!s_[it->second.first].gone)
        return "skipped a live sender's reservation at " + std::to_string(it->first);
      if (arrived_.contains(it->first)) return "skipped a message that arrived";
    }
    ++holes_;
    tail_ = v.to;
    return {};
  }

  // Every sender still there has sent everything and the receiver has caught up.
  bool finished() const {
    for (auto& x : s_)
      if (!x.gone && x.sent < per_) return false;
    return tail_ == counter_;
  }
  // After finished(): each sender got exactly what it wrote delivered (all of it if it lived).
  std::string check_delivered() const {
    for (auto& x : s_) {
      if (x.delivered != x.sent) return "a sender's written messages were not all delivered";
      if (!x.gone && x.sent != per_) return "a live sender did not finish";
    }
    return {};
  }
  // Runs everyone fairly (nobody dies) for at most max_rounds; the ring must drain.
  std::string drain(unsigned max_rounds, uint64_t len) {
    for (unsigned r = 0; r < max_rounds && !finished(); ++r) {
      for (unsigned i = 0; i < s_.size(); ++i) sender_step(i, len);
      if (auto e = receiver_step(); !e.empty()) return e;
    }
    if (!finished())
      return "the ring blocked (tail " + std::to_string(tail_) + ", reserved " + std::to_string(counter_) +
             ")";
    return check_delivered();
  }

  unsigned senders() const { return static_cast<unsigned>(s_.size()); }
  uint64_t holes() const { return holes_; }

 private:
  struct Sender {
    bool gone = false, reserved = false, announced_start = false;
    uint64_t sent = 0, arrived = 0, delivered = 0, announce = 0, start = 0, len = 0;
  };
  struct Arrival {
    unsigned sender;
    uint64_t index, len;
  };
  std::vector<Sender> s_;
  uint64_t ring_, per_;
  uint64_t counter_ = 0, tail_ = 0, holes_ = 0;
  std::map<uint64_t, std::pair<unsigned, uint64_t>> owner_;  // reservation start -> sender, message
  std::map<uint64_t, Arrival> arrived_;
};

}  // namespace weft::msg::sim
