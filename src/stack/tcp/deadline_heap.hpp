#pragma once
// The connections that have a timer, ordered by their next deadline: a binary min-heap that
// keeps each connection's position inside it, so a deadline that moves is sifted in place
// (O(log n)) and the heap never holds more than one entry per connection. TcpLayer::poll takes
// only the connections that are due and next_deadline() is the top: neither walks the 10,000
// idle connections issue 13 asks for. The vector grows with the number of connections that have
// a timer, never per segment.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace weft::stack::tcp {

// What a heap member carries: its key and where it sits (kNone when not in the heap).
struct HeapSlot {
  static constexpr size_t kNone = std::numeric_limits<size_t>::max();
  int64_t at = std::numeric_limits<int64_t>::max();
  size_t index = kNone;
};

template <typename T, HeapSlot T::*Slot>
class DeadlineHeap {
 public:
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  bool empty() const { return v_.empty(); }
  size_t size() const { return v_.size(); }
  int64_t top_at() const { return v_.empty() ? kNever : (v_[0]->*Slot).at; }
  T* top() const { return v_.empty() ? nullptr : v_[0]; }

  // Puts `x` at `at`, moving it if it is there already; kNever takes it out.
  void set(T* x, int64_t at) {
    HeapSlot& s = x->*Slot;
    if (at == kNever) {
      remove(x);
      return;
    }
    if (s.index == HeapSlot::kNone) {
      s.at = at;
      s.index = v_.size();
      v_.push_back(x);
      up(s.index);
      return;
    }
    if (at == s.at) return;
    const bool earlier = at < s.at;
    s.at = at;
    if (earlier)
      up(s.index);
    else
      down(s.index);
  }

  void remove(T* x) {
    HeapSlot& s = x->*Slot;
    if (s.index == HeapSlot::kNone) return;
    const size_t i = s.index;
    s.index = HeapSlot::kNone;
    s.at = kNever;
    T* last = v_.back();
    v_.pop_back();
    if (i == v_.size()) return;
    v_[i] = last;
    (last->*Slot).index = i;
    up(i);
    down((last->*Slot).index);
  }

 private:
  bool less(size_t a, size_t b) const { return (v_[a]->*Slot).at < (v_[b]->*Slot).at; }
  void swap_at(size_t a, size_t b) {
    std::swap(v_[a], v_[b]);
    (v_[a]->*Slot).index = a;
    (v_[b]->*Slot).index = b;
  }
  void up(size_t i) {
    while (i > 0) {
      const size_t p = (i - 1) / 2;
      if (!less(i, p)) return;
      swap_at(i, p);
      i = p;
    }
  }
  void down(size_t i) {
    for (;;) {
      const size_t l = 2 * i + 1, r = l + 1;
      size_t m = i;
      if (l < v_.size() && less(l, m)) m = l;
      if (r < v_.size() && less(r, m)) m = r;
      if (m == i) return;
      swap_at(i, m);
      i = m;
    }
  }

  std::vector<T*> v_;
};

}  // namespace weft::stack::tcp
