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
  virtual int64_t now_ns() const = 0;
};

class MonotonicClock final : public Clock {
 public:
  int64_t now_ns() const override { return mono_ns(); }
};

class VirtualClock final : public Clock {
 public:
  explicit VirtualClock(int64_t start_ns = 0) : now_(start_ns) {}
  int64_t now_ns() const override { return now_; }
  void advance(int64_t ns) { now_ += ns; }
  void set(int64_t ns) { now_ = ns; }

 private:
  int64_t now_;
};

inline constexpr int64_t kMs = 1'000'000;
inline constexpr int64_t kSec = 1'000'000'000;

}  // namespace weft::stack
