#pragma once
// The stack's one source of time, in nanoseconds. Every timer (RTO, delayed ACK, TIME-WAIT,
// persist, keepalive, reassembly) reads it, so tests drive a VirtualClock and run minutes of
// protocol time in microseconds, deterministically.
#include <cstdint>

#include "base/clock.hpp"

namespace weft::stack {

class Clock {
 public:
  virtual ~Clock() = default;
  // The time: while a Hold on this clock lives, the reading the outermost Hold took.
  int64_t now_ns() const { return holds_ > 0 ? held_ns_ : read_ns(); }

  // One reading for a piece of work that reads the time many times (every segment of a transmit
  // burst asks for its send time, its timestamp option, its timers; every ACK for its RTT sample,
  // RACK and CUBIC): what Linux does with tcp_mstamp / tcp_clock_cache, refreshed once per
  // incoming segment and once per tcp_write_xmit. The interface holds the clock for each frame it
  // receives and for its timer pass, a connection for each output() (see docs/stack.md, "Time").
  // Holds nest; the clock is one thread's, as the stack is. A VirtualClock moved during a Hold
  // is seen when the outermost Hold ends.
  class Hold {
   public:
    explicit Hold(const Clock& c) : c_(c) {
      if (c_.holds_++ == 0) c_.held_ns_ = c_.read_ns();
    }
    ~Hold() { --c_.holds_; }
    // Takes a new reading for everyone holding the clock (time moves on, never back).
    void refresh() { c_.held_ns_ = c_.read_ns(); }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    const Clock& c_;
  };
  bool held() const { return holds_ > 0; }

 protected:
  virtual int64_t read_ns() const = 0;  // a fresh reading

 private:
  mutable int64_t held_ns_ = 0;
  mutable uint32_t holds_ = 0;
};

class MonotonicClock final : public Clock {
 public:
  int64_t read_ns() const override { return mono_ns(); }
};

class VirtualClock final : public Clock {
 public:
  explicit VirtualClock(int64_t start_ns = 0) : now_(start_ns) {}
  int64_t read_ns() const override { return now_; }
  void advance(int64_t ns) { now_ += ns; }
  void set(int64_t ns) { now_ = ns; }

 private:
  int64_t now_;
};

inline constexpr int64_t kMs = 1'000'000;
inline constexpr int64_t kSec = 1'000'000'000;

}  // namespace weft::stack
