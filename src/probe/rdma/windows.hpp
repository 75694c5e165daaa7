#pragma once
// One target's open windows. A probe belongs to the window of its deadline (like the UDP/TCP
// prober); answered probes resolve before their deadline and lost ones at it, so the window that
// ends at E is complete once the sweep has passed E. A few windows stay open at once because
// probes of the next window can be answered while older ones still wait for their deadline.
#include <array>
#include <cstdint>

#include "probe/accumulator.hpp"

namespace weft::probe {

class RdmaWindows {
 public:
  // Deadlines lie within one timeout of now; with timeout <= window two windows are open at most,
  // one more covers the window that just ended until the sweep closes it.
  static constexpr size_t kOpen = 3;

  // The accumulator of the window holding t_unix_ns (opened if needed). When every slot holds a
  // window, the oldest one is finished early through emit(index, acc) to make room.
  template <typename Emit>
  WindowAccumulator& at(int64_t t_unix_ns, int64_t window_ns, Emit&& emit) {
    const int64_t idx = window_index(t_unix_ns, window_ns);
    WindowAccumulator* free_slot = nullptr;
    WindowAccumulator* oldest = nullptr;
    for (auto& a : acc_) {
      if (a.open() && a.index() == idx) return a;
      if (!a.open())
        free_slot = free_slot ? free_slot : &a;
      else if (!oldest || a.index() < oldest->index())
        oldest = &a;
    }
    if (!free_slot) {
      emit(*oldest);
      free_slot = oldest;
    }
    free_slot->start(idx);
    return *free_slot;
  }

  // Finishes (through emit(acc), oldest first) every open window that ended at or before t_unix_ns.
  template <typename Emit>
  void close_until(int64_t t_unix_ns, int64_t window_ns, Emit&& emit) {
    for (;;) {
      WindowAccumulator* oldest = nullptr;
      for (auto& a : acc_)
        if (a.open() && window_start(a.index() + 1, window_ns) <= t_unix_ns &&
            (!oldest || a.index() < oldest->index()))
          oldest = &a;
      if (!oldest) return;
      emit(*oldest);
    }
  }

  // Finishes every open window (the target is removed, or the engine stops).
  template <typename Emit>
  void close_all(Emit&& emit) {
    close_until(INT64_MAX, 1, emit);
  }

 private:
  std::array<WindowAccumulator, kOpen> acc_;
};

}  // namespace weft::probe
